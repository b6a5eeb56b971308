# Copyright 2026 The ironic-partition Authors.
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""The previous version of this project, in a virtualenv of its own.

For the rolling-upgrade test: the code of an earlier commit of this
repository (the last one whose schema stops at a given migration), as an
operator would have it installed, beside this version. The virtualenv
holds that version of ironic-partition, installed by pip from the
commit's files, and sees this environment's other packages through a
directory of links that leaves this version out, so both versions run
the same dependencies and nothing is downloaded.
"""

import os
import subprocess
import sys
import sysconfig

import fixtures

#: Where the repository is, when the tests do not run from its top.
REPO_ENV = 'IRONIC_PARTITION_TEST_REPO'
#: The project's package and distribution names, left out of the links.
_OWN = ('ironic_partition', 'ironic-partition')
_MIGRATIONS = 'ironic_partition/db/migrations/versions'


class PreviousVersionError(Exception):
    """The previous version cannot be built here."""


def _git(repo, *args):
    proc = subprocess.run(['git', '-C', repo] + list(args),
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise PreviousVersionError('git %s failed in %s: %s' % (
            ' '.join(args), repo, proc.stderr.strip()))
    return proc.stdout.strip()


def repository():
    """This project's git repository (the test's working directory).

    :returns: its top directory.
    :raises PreviousVersionError: not in a git checkout with history.
    """
    start = os.environ.get(REPO_ENV) or os.getcwd()
    return _git(start, 'rev-parse', '--show-toplevel')


def commit_before(repo, migration):
    """The last commit whose newest migration is the one before ``migration``.

    :param repo: the repository.
    :param migration: a migration's file name, such as
        ``0005_outside_peers.py``.
    :returns: ``(sha, commits)``: the commit and how many commits lead to
        it (pbr's development version number).
    """
    added = _git(repo, 'log', '--diff-filter=A', '--format=%H', '--',
                 '%s/%s' % (_MIGRATIONS, migration)).splitlines()
    if not added:
        raise PreviousVersionError(
            'no commit of %s adds the migration %s: the rolling-upgrade '
            'test needs the repository\'s history (a clone, not a shallow '
            'copy)' % (repo, migration))
    sha = _git(repo, 'rev-parse', '%s^' % added[-1])
    return sha, int(_git(repo, 'rev-list', '--count', sha))


class PreviousVersion(fixtures.Fixture):
    """A virtualenv holding this project at an earlier commit.

    :param workdir: where to build it.
    :param migration: the first migration the previous version lacks.
    :ivar version: its version, as pip installed it.
    :ivar reported_version: its version, as its services report it.
    :ivar commit: the commit it was built from.
    :ivar bin: its virtualenv's ``bin`` directory.
    """

    def __init__(self, workdir, migration):
        super().__init__()
        self.workdir = workdir
        self.migration = migration
        self.version = None
        self.reported_version = None
        self.commit = None
        self.bin = None

    def _setUp(self):
        os.makedirs(self.workdir, exist_ok=True)
        repo = repository()
        self.commit, count = commit_before(repo, self.migration)
        self.version = '0.0.1.dev%d' % count
        # NOTE(ironic-partition): a clone, not an archive: pbr installs
        # the files git tracks (the migrations' scripts among them).
        source = os.path.join(self.workdir, 'source')
        _git(self.workdir, 'clone', '--quiet', '--shared', '--no-checkout',
             repo, source)
        _git(source, 'checkout', '--quiet', '--detach', self.commit)
        venv = os.path.join(self.workdir, 'venv')
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip', venv],
                       check=True, timeout=120)
        self.bin = os.path.join(venv, 'bin')
        python = os.path.join(self.bin, 'python')
        site = subprocess.run(
            [python, '-c', 'import sysconfig; '
             'print(sysconfig.get_paths()["purelib"])'],
            capture_output=True, text=True, check=True,
            timeout=60).stdout.strip()
        deps = os.path.join(self.workdir, 'deps')
        os.makedirs(deps)
        ours = sysconfig.get_paths()['purelib']
        for name in os.listdir(ours):
            if name.replace('-', '_').startswith(_OWN[0]) or \
                    name.startswith('__editable__') or name.endswith('.pth'):
                continue
            os.symlink(os.path.join(ours, name), os.path.join(deps, name))
        with open(os.path.join(site, 'ironic_partition_deps.pth'), 'w') as f:
            f.write(deps + '\n')
        env = dict(os.environ, PBR_VERSION=self.version)
        proc = subprocess.run(
            [sys.executable, '-m', 'pip', '--python', python, 'install',
             '--quiet', '--no-deps', '--no-build-isolation', '--no-index',
             source], capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode != 0:
            raise PreviousVersionError(
                'pip could not install %s at %s: %s' % (
                    _OWN[1], self.commit, proc.stderr[-2000:]))
        # NOTE(ironic-partition): from another directory than the
        # checkout's, whose package this version must not import.
        self.reported_version = subprocess.run(
            [python, '-c', 'import ironic_partition; '
             'print(ironic_partition.__version__)'],
            capture_output=True, text=True, check=True, timeout=60,
            cwd=self.workdir).stdout.strip()

    def script(self, name):
        """A console script of the previous version.

        :param name: such as ``ironic-partition``.
        :returns: its path.
        """
        return os.path.join(self.bin, name)

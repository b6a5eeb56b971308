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

"""A proposed upstream fix, applied to a copy of an installed package.

The fixes we propose to other projects (``doc/source/contributor/
upstream/``) are tested against the release we run, without touching the
environment: :func:`patched_copy` copies the installed package into a
directory of the test's and applies the patch there (``git apply``); a
process started with :func:`pythonpath` first on its ``PYTHONPATH`` runs
the fixed copy, every other process the release.
"""

import importlib.util
import os
import shutil
import subprocess

from ironic_partition.testing import process as harness_process


def installed_path(package):
    """The directory an installed top-level package is imported from.

    :param package: e.g. ``oslo_service``.
    :returns: the path.
    :raises HarnessError: when the package is not installed.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise harness_process.HarnessError(
            'package %s is not installed' % package)
    return list(spec.submodule_search_locations)[0]


def patched_copy(package, patch_file, dest, include=None):
    """Copy an installed package under ``dest`` and apply patches to it.

    Only the patches' files under the package are applied (a release
    note, say, has nowhere to go in an installed package).

    :param package: the top-level package, e.g. ``oslo_service``.
    :param patch_file: a ``git format-patch`` file with paths relative to
        the project's root (``oslo_service/...``), or a list of them,
        applied in order.
    :param dest: an empty directory of the caller's.
    :param include: a ``git apply --include`` pattern to apply part of
        the patch (its tests alone on the release, say); the whole
        package's part by default.
    :returns: ``dest``, to put first on a process's ``PYTHONPATH``.
    :raises HarnessError: when a patch does not apply, with git's words.
    """
    shutil.copytree(installed_path(package), os.path.join(dest, package),
                    ignore=shutil.ignore_patterns('__pycache__'))
    patches = ([patch_file] if isinstance(patch_file, str)
               else list(patch_file))
    for patch in patches:
        result = subprocess.run(
            ['git', 'apply', '--include=%s' % (include or package + '/*'),
             os.path.abspath(patch)],
            cwd=dest, capture_output=True, text=True)
        if result.returncode:
            raise harness_process.HarnessError(
                '%s does not apply to the installed %s: %s' % (
                    patch, package, result.stderr.strip()))
    return dest


def pythonpath(first, env=None):
    """An environment whose ``PYTHONPATH`` starts with ``first``.

    :param first: the directory that wins imports.
    :param env: the environment to extend; this process's by default.
    :returns: a new dict.
    """
    env = dict(os.environ if env is None else env)
    rest = env.get('PYTHONPATH')
    env['PYTHONPATH'] = first + (os.pathsep + rest if rest else '')
    return env

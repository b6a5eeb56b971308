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

"""The module map of the contributor docs matches the tree."""

import ast
import os
import re
import subprocess
import sys

import ironic_partition
from ironic_partition.tests import base

PACKAGE = os.path.dirname(os.path.abspath(ironic_partition.__file__))
MAP = os.path.join(os.path.dirname(PACKAGE), 'doc', 'source',
                   'contributor', 'modules.rst')

#: The layers from the bottom up.
LAYERS = ('foundation', 'pure', 'edge', 'core', 'entry', 'testing')

_ROW = re.compile(r'^   \* - ``([^`]+)``\n     - (\w+)\n', re.M)


def _tree():
    found = set()
    for root, dirs, files in os.walk(PACKAGE):
        rel = os.path.relpath(root, PACKAGE)
        dirs[:] = [d for d in dirs if d not in ('tests', '__pycache__')]
        found.update(os.path.normpath(os.path.join(rel, name))
                     for name in files if name.endswith('.py'))
    return found


def _module(path):
    name = path[:-len('.py')].replace(os.sep, '.')
    if name.endswith('__init__'):
        name = name[:-len('.__init__')] if '.' in name else ''
    return 'ironic_partition' + ('.' + name if name else '')


def _imports(path):
    """Our modules a file imports, as dotted names."""
    with open(os.path.join(PACKAGE, path)) as stream:
        tree = ast.parse(stream.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith('ironic_partition'):
            names.update('%s.%s' % (node.module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names
                         if a.name.startswith('ironic_partition'))
    return names


class ModuleMapTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists(MAP):
            self.skipTest('no source tree (%s)' % MAP)
        with open(MAP) as stream:
            self.rows = dict(_ROW.findall(stream.read()))

    def test_every_module_is_listed_once(self):
        tree = _tree()
        self.assertEqual([], sorted(tree - set(self.rows)),
                         'modules missing from %s' % MAP)
        self.assertEqual([], sorted(set(self.rows) - tree),
                         'listed in %s but gone' % MAP)

    def test_layers_are_known(self):
        self.assertEqual({}, {p: layer for p, layer in self.rows.items()
                              if layer not in LAYERS})

    def test_no_eventlet_in_our_processes(self):
        # The entry points a process loads never import eventlet (a
        # library that does, futurist, is kept out): the agent and the CLI
        # run native threads, and inside nova-compute nova decides.
        code = ('import sys\n'
                'import ironic_partition.cmd.cli\n'
                'import ironic_partition.cmd.agent\n'
                'import ironic_partition.virt.mixin\n'
                'import ironic_partition.inspection.mapping\n'
                'print(sorted(m for m in sys.modules\n'
                '             if m.split(".")[0] in\n'
                '             ("eventlet", "futurist")))')
        found = subprocess.run([sys.executable, '-c', code], check=True,
                               capture_output=True, text=True)
        self.assertEqual('[]', found.stdout.strip(), found.stderr)

    def test_no_module_imports_a_higher_layer(self):
        layer_of = {_module(p): LAYERS.index(layer)
                    for p, layer in self.rows.items() if layer in LAYERS}
        wrong = []
        for path, layer in sorted(self.rows.items()):
            if layer not in LAYERS or not os.path.exists(
                    os.path.join(PACKAGE, path)):
                continue
            mine = LAYERS.index(layer)
            for name in sorted(_imports(path)):
                # NOTE(ironic-partition): "from a.b import c" imports the
                # module a.b.c, or the name c of the module a.b.
                theirs = layer_of.get(name, layer_of.get(
                    name.rsplit('.', 1)[0]))
                if theirs is not None and theirs > mine:
                    wrong.append('%s (%s) imports %s (%s)' % (
                        path, layer, name, LAYERS[theirs]))
        self.assertEqual([], wrong)

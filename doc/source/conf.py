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

# -- General configuration ----------------------------------------------------

extensions = [
    'sphinx.ext.autodoc',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'cliff.sphinxext',
    'openstackdocstheme',
]

# oslo_config.sphinxconfiggen writes _static/ironic-partition.conf.sample
config_generator_config_file = (
    '../../tools/config/ironic-partition-config-generator.conf')
sample_config_basename = '_static/ironic-partition'

openstackdocs_repo_name = 'x/ironic-partition'
openstackdocs_use_storyboard = False
openstackdocs_bug_project = 'ironic-partition'
openstackdocs_bug_tag = ''
openstackdocs_auto_name = False

source_suffix = '.rst'
master_doc = 'index'
project = 'ironic-partition'
copyright = '2026, The ironic-partition Authors'
add_module_names = True
pygments_style = 'native'
exclude_patterns = []

# -- Options for HTML output --------------------------------------------------

html_theme = 'openstackdocs'
html_static_path = ['_static']

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

"""Other installed code a test runs against.

``previous`` installs the previous release of this plugin (rolling
upgrades), ``upstream`` applies a fix proposed to nova or Ironic to a copy
of the installed package, and ``deployers`` renders the deployment tools'
configurations (kolla-ansible, OpenStack-Ansible, openstack-helm).
"""

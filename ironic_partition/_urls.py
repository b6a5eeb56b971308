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

"""URLs shown to people: with their password hidden."""

import urllib.parse

#: What replaces a password.
MASK = '***'


def mask(url):
    """Return a URL with its password hidden, for logs and messages.

    Works for SQLAlchemy URLs (``mysql+pymysql://user:pass@host/db``) and
    HTTP endpoints alike; the rest of the URL is kept as written.

    :param url: a URL string, or None.
    :returns: the URL with the password replaced by ``***``; ``url``
        itself when it has no password; a placeholder when it cannot be
        parsed.
    """
    if not url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return '<unparsable URL>'
    if not password:
        return url
    userinfo, _sep, hostinfo = parts.netloc.rpartition('@')
    user = userinfo.split(':', 1)[0]
    netloc = '%s:%s@%s' % (user, MASK, hostinfo)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))

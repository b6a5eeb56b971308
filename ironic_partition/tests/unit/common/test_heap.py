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

import ctypes
import platform
import resource

from oslotest import base

from ironic_partition.common import heap


def _resident_bytes():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * resource.getpagesize()


class TestRelease(base.BaseTestCase):

    def test_glibc_gives_the_free_pages_back(self):
        if platform.libc_ver()[0] != 'glibc':
            self.skipTest('not glibc')
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        size = 64 * 1024
        # 32 MiB of blocks under the mmap threshold, written (so resident),
        # then freed but the last, which keeps the heap from shrinking on
        # its own: the freed pages stay resident until trimmed.
        blocks = [libc.malloc(size) for _ in range(512)]
        for block in blocks:
            ctypes.memset(block, 1, size)
        for block in blocks[:-1]:
            libc.free(block)
        try:
            held = _resident_bytes()
            self.assertTrue(heap.release())
            self.assertLess(_resident_bytes(), held - 16 * 2 ** 20)
        finally:
            libc.free(blocks[-1])

    def test_another_c_library_is_left_alone(self):
        self.patch(heap, '_TRIM', None)
        self.assertFalse(heap.release())

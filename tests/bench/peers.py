"""The systems tests/bench/compare.py measures, each mounted from the same dev cluster and data.

Every system has: name; load(data, mnt) to put the dataset in once; mount(mnt, cache_bytes) for a
fresh mount whose disk cache (if it has one) is empty and capped at cache_bytes, returning the
directory to read; unmount(mnt); rss_mib() of its daemon (0 when it has none); and
wait_durable(path, size), which returns once a file written and fsynced through it is in Ceph.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import fs_compare as fc

ROOT = fc.ROOT
DEV = os.path.join(ROOT, 'deploy', 'dev-cluster')


def wait_mounted(proc, mnt, what):
    for _ in range(600):
        if os.path.ismount(mnt):
            return
        if proc is not None and proc.poll() is not None:
            sys.exit(f'{what} failed to mount ({proc.returncode})')
        time.sleep(0.1)
    sys.exit(f'{what} did not come up at {mnt}')


def copy_tree(data, mnt, parts):
    for part in parts:
        fc.run('cp', '-r', os.path.join(data, part), os.path.join(mnt, part))


def pid_from(pattern):
    files = sorted(glob.glob(pattern), key=os.path.getmtime)
    if not files:
        return None
    with open(files[-1]) as f:
        return int(f.read().strip())


class Tierfs:
    """tierfs on the cluster's pool, with a cache device file (removed for a cold cache); read
    workloads mount --read-only, the documented mode for datasets (no OPEN/RELEASE per file)."""
    name = 'tierfs'

    def __init__(self, binary, env, work):
        self.binary, self.proc = binary, None
        self.cache_dir = os.path.join(work, 'tierfs-cache')
        self.log = os.path.join(work, 'tierfs.log')
        self.flags = ['--backend', 'rados', '--conf', env['TIERFS_CEPH_CONF'], '--keyring',
                      env['TIERFS_CEPH_KEYRING'], '--user', env['TIERFS_CEPH_USER'], '--pool',
                      env['TIERFS_CEPH_POOL'], '--namespace', 'compare']

    def load(self, data, mnt, parts):
        fc.run(self.binary, 'mkfs', *self.flags, '--if-missing', stdout=subprocess.DEVNULL)
        for part in parts:
            fc.run(self.binary, 'import', *self.flags, os.path.join(data, part), '/' + part,
                   stdout=subprocess.DEVNULL)

    def mount(self, mnt, cache_bytes, read_only=True, keep_cache=False, training=False):
        """training: the 1.5x workload, where the device is the whole cache (memory tier off, so
        that the cap is the peers' cap) and eviction is `training`, tierfs's documented policy for
        a dataset larger than the cache. Otherwise tierfs's defaults (a 128 MiB memory tier), as
        every peer keeps its own memory caches."""
        if not keep_cache:
            shutil.rmtree(self.cache_dir, ignore_errors=True)
        os.makedirs(self.cache_dir, exist_ok=True)
        device = f'{os.path.join(self.cache_dir, "dev0")}={cache_bytes >> 20}M'
        extra = ['--cache-device', device] + (['--read-only'] if read_only else [])
        extra += ['--cache-memory', '0', '--cache-eviction', 'training'] if training else []
        # (--cache-device takes several values: an option must follow it, not the mount point)
        self.proc = subprocess.Popen([self.binary, 'mount', '-f', *self.flags, *extra,
                                      '--log', self.log, mnt])
        wait_mounted(self.proc, mnt, f'tierfs (its log: {self.log})')
        return mnt

    def unmount(self, mnt):
        fc.run('fusermount3', '-u', mnt)
        if self.proc.wait(timeout=900) != 0:
            sys.exit(f'tierfs exited with {self.proc.returncode}')

    def rss_mib(self):
        return fc.vm_hwm_mib(self.proc.pid)

    def wait_durable(self, path, size):
        pass  # fsync returns once the chunks and the commit are in RADOS


class CephFuse:
    """ceph-fuse on the cluster's CephFS, its defaults (an in-memory object cache of 200 MiB,
    client_oc_size; it has no disk cache)."""
    name = 'ceph-fuse'

    def __init__(self, cluster):
        self.cluster = cluster

    def load(self, data, mnt, parts):
        self.mount(mnt, 0)
        copy_tree(data, mnt, parts)
        self.unmount(mnt)

    def mount(self, mnt, cache_bytes, **_):
        fc.run(os.path.join(DEV, 'cephfs-mount.sh'), self.cluster, mnt, stdout=subprocess.DEVNULL)
        return mnt

    def unmount(self, mnt):
        fc.run(os.path.join(DEV, 'cephfs-mount.sh'), '--unmount', self.cluster, mnt,
               stdout=subprocess.DEVNULL)

    def rss_mib(self):
        pid = pid_from(os.path.join(self.cluster, 'run', 'ceph-fuse.*.pid'))
        return fc.vm_hwm_mib(pid) if pid else 0

    def wait_durable(self, path, size):
        pass  # ceph-fuse's fsync returns once the OSDs have the data


class S3Mount:
    """s3fs or rclone mount of the radosgw bucket, with its disk cache on and capped
    (deploy/dev-cluster/s3-mount.sh). Both read the same bucket; the dataset goes in once."""

    def __init__(self, kind, cluster, work, env):
        self.kind, self.cluster, self.env = kind, cluster, env
        self.name = {'s3fs': 's3fs', 'rclone': 'rclone'}[kind]
        self.cache_dir = os.path.join(work, f'{kind}-cache')

    def load(self, data, mnt, parts):
        """Straight into the bucket with `rclone copy`, 16 uploads at once (through the s3fs
        mount, one file at a time, the quick dataset took over 5 minutes). s3fs and rclone share
        the bucket: compare.py loads it once."""
        for part in parts:
            fc.run(*self.rclone(), 'copy', '--transfers', '16', '--checkers', '16',
                   os.path.join(data, part), f'rgw:{self.env["TIERFS_S3_BUCKET"]}/{part}',
                   env=self.rclone_env())

    def rclone(self):
        return ['rclone', '--config', os.path.join(os.path.dirname(self.cache_dir), 'rclone.conf')]

    def rclone_env(self):
        """The remote "rgw:" defined in the environment (rclone's RCLONE_CONFIG_<NAME>_*)."""
        # rclone 1.60 fails with LoadCustomCABundleError when AWS_CA_BUNDLE is set.
        env = {k: v for k, v in os.environ.items() if k != 'AWS_CA_BUNDLE'}
        env.update(RCLONE_CONFIG_RGW_TYPE='s3', RCLONE_CONFIG_RGW_PROVIDER='Ceph',
                   RCLONE_CONFIG_RGW_ENDPOINT=self.env['TIERFS_S3_ENDPOINT'],
                   RCLONE_CONFIG_RGW_ACCESS_KEY_ID=self.env['TIERFS_S3_ACCESS_KEY'],
                   RCLONE_CONFIG_RGW_SECRET_ACCESS_KEY=self.env['TIERFS_S3_SECRET_KEY'])
        return env

    def mount(self, mnt, cache_bytes, **_):
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        os.makedirs(self.cache_dir)
        fc.run(os.path.join(DEV, 's3-mount.sh'), f'--{self.kind}', self.cluster, mnt,
               '--cache-dir', self.cache_dir, '--cache-size', f'{cache_bytes >> 20}M',
               stdout=subprocess.DEVNULL)
        return mnt

    def unmount(self, mnt):
        fc.run(os.path.join(DEV, 's3-mount.sh'), '--unmount', self.cluster, mnt,
               stdout=subprocess.DEVNULL)

    def rss_mib(self):
        pid = pid_from(os.path.join(self.cluster, 'run', f'{self.kind}.*.pid'))
        return fc.vm_hwm_mib(pid) if pid else 0

    def wait_durable(self, path, size, limit=900):
        """s3fs uploads on fsync; rclone's fsync syncs its cache file and uploads later: poll
        the bucket until the object is whole."""
        if self.kind != 'rclone':
            return
        rel = os.path.basename(path)
        cmd = [*self.rclone(), 'lsjson', f'rgw:{self.env["TIERFS_S3_BUCKET"]}/{rel}']
        env = self.rclone_env()
        deadline = time.time() + limit
        while time.time() < deadline:
            out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
            if any(e.get('Size') == size for e in json.loads(out or '[]')):
                return
            time.sleep(0.2)
        sys.exit(f'rclone: {rel} not in the bucket after {limit} s')


class Passthrough:
    """tests/bench/passthrough_fs over the dataset on the local disk: the FUSE ceiling. Mounted
    like tierfs --read-only (OPEN answered with ENOSYS, read-only)."""
    name = 'passthrough'

    def __init__(self, binary, data):
        self.binary, self.data, self.proc = binary, data, None

    def load(self, data, mnt, parts):
        pass

    def mount(self, mnt, cache_bytes, **_):
        self.proc = subprocess.Popen([self.binary, self.data, mnt, '--no-open', '-o', 'ro'])
        wait_mounted(self.proc, mnt, 'passthrough_fs')
        return mnt

    def unmount(self, mnt):
        fc.run('fusermount3', '-u', mnt)
        self.proc.wait(timeout=120)

    def rss_mib(self):
        return fc.vm_hwm_mib(self.proc.pid)

    def wait_durable(self, path, size):
        pass


class Ext4:
    """The dataset directory on the local ext4 disk, read directly: the local-disk ceiling."""
    name = 'ext4'

    def __init__(self, data):
        self.data = data

    def load(self, data, mnt, parts):
        pass

    def mount(self, mnt, cache_bytes, **_):
        return self.data

    def unmount(self, mnt):
        pass

    def rss_mib(self):
        return 0

    def wait_durable(self, path, size):
        pass

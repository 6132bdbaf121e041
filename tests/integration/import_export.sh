#!/usr/bin/env bash
# `tierfs import` and `tierfs export` with a dir-backend volume (no FUSE, no Ceph): a tree with
# every kind of entry, odd names, modes, past times and xattrs goes in and comes out the same;
# import into a subpath, export of a single file, refusing to overwrite, --overwrite, the config
# file's [fs] compression, an import killed half-way, and the errors a user sees.
set -euo pipefail
tierfs=$1
work=$(mktemp -d)
# Read-only directories in the trees would stop rm as a normal user.
trap 'chmod -R u+rwx "$work" 2> /dev/null; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
store=(--backend dir --path "$work/store")
src=$work/src
root=0
[[ $(id -u) == 0 ]] && root=1

# A description of a tree, one JSON line per entry: type, mode, times (ns), owner (as root),
# size and sha256 or symlink target, user.* xattrs. Fifos and sockets are left out (not copied).
cat > "$work/manifest.py" << 'PY'
import hashlib, json, os, stat, sys
top, owners = sys.argv[1], sys.argv[2] == "1"
def xattrs(p):
    try:
        return {n: os.getxattr(p, n, follow_symlinks=False).hex()
                for n in sorted(os.listxattr(p, follow_symlinks=False)) if n.startswith("user.")}
    except OSError:
        return {}
def describe(rel):
    p = os.path.join(top, rel) if rel else top
    st = os.lstat(p)
    e = {"path": rel, "mode": oct(st.st_mode), "mtime": st.st_mtime_ns, "atime": st.st_atime_ns}
    if owners:
        e["owner"] = [st.st_uid, st.st_gid]
    if stat.S_ISLNK(st.st_mode):
        e["target"] = os.readlink(p)
    elif stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        e["size"], e["sha256"], e["xattrs"] = st.st_size, h.hexdigest(), xattrs(p)
    elif stat.S_ISDIR(st.st_mode):
        e["xattrs"] = xattrs(p)
    else:
        return None
    return e
entries = [describe("")]
for dirpath, dirs, files in os.walk(top):
    for name in dirs + files:
        entries.append(describe(os.path.relpath(os.path.join(dirpath, name), top)))
for e in sorted((e for e in entries if e), key=lambda e: e["path"]):
    print(json.dumps(e, sort_keys=True))
PY
manifest() { python3 "$work/manifest.py" "$1" "$root"; }
same_tree() {  # same_tree EXPECTED_MANIFEST DIR WHAT
  manifest "$2" > "$work/got.manifest"
  diff "$1" "$work/got.manifest" > "$work/diff" || fail "$3: trees differ: $(head -c 3000 "$work/diff")"
}

# ---------------------------------------------------------------- the source tree
mkdir -p "$src/nested/deeper/deepest" "$src/empty dir" "$src/setgid" "$src/private" \
  "$src/read only"
head -c $((50 * 1024 * 1024 + 777)) /dev/urandom > "$src/big.bin"
head -c $((4 * 1024 * 1024)) /dev/urandom > "$src/nested/chunk-sized.bin"
head -c $((4 * 1024 * 1024 + 1)) /dev/urandom > "$src/nested/chunk-plus-one.bin"
python3 -c 'import sys; sys.stdout.write("tierfs compresses this line well.\n" * 600000)' \
  > "$src/compressible.txt"
: > "$src/empty"
: > "$src/nested/deeper/deepest/also empty"
echo "small" > "$src/nested/small.txt"
echo "spaces" > "$src/with  spaces .txt"
echo "newline" > "$src/new"$'\n'"line"
echo "utf-8" > "$src/ünïcødé-日本語-ファイル"
echo "dash" > "$src/-starts-with-dash"
echo "quotes" > "$src/quote's \"and\" back\\slash"
echo "secret" > "$src/private/secret"
echo "in setgid" > "$src/setgid/file"
echo "in read-only dir" > "$src/read only/file"
ln "$src/nested/small.txt" "$src/hardlink-to-small.txt"
ln -s nested/small.txt "$src/relative-link"
ln -s "$src/big.bin" "$src/absolute-link"
ln -s "no/such/target" "$src/dangling-link"
ln -s "../../big.bin" "$src/nested/deeper/up-link"
mkfifo "$src/nested/fifo"
xattrs=1
python3 - "$src" 2> /dev/null << 'PY' || xattrs=0
import os, sys
top = sys.argv[1]
os.setxattr(f"{top}/nested/small.txt", "user.checksum", b"sha256:abc")
os.setxattr(f"{top}/nested/small.txt", "user.empty", b"")
os.setxattr(f"{top}/big.bin", "user.binary", bytes(range(256)))
os.setxattr(f"{top}/nested", "user.dir", "Ürsprung".encode())
PY
chmod 0600 "$src/private/secret"
chmod 0700 "$src/private"
chmod 0755 "$src/big.bin"
chmod 0400 "$src/nested/small.txt"
chmod 2775 "$src/setgid"
chmod 1777 "$src/nested/deeper"
if (( root )); then
  chown 1234:5678 "$src/nested/small.txt"
  chown 4321:8765 "$src/nested/deeper"
  chown -h 1111:2222 "$src/relative-link"
fi
(( xattrs )) || echo "note: $work does not take user.* xattrs: they are not checked"
# mtimes in the past to the nanosecond, directories last and the deepest first. Each atime is an
# hour ahead, after the ctime, so that reading the tree (relatime) does not move it.
now=$(date +%s)
find "$src" -depth -print0 | while IFS= read -r -d '' p; do
  touch -h -m -d "@$(( 978307200 + ${#p} * 1000 )).123456789" "$p"
  touch -h -a -d "@$(( now + 3600 + ${#p} )).987654321" "$p"
done
chmod 0555 "$src/read only"
manifest "$src" > "$work/src.manifest"
files=$(find "$src" -type f -printf . | wc -c)
links=$(find "$src" -type l -printf . | wc -c)
dirs=$(find "$src" -type d -printf . | wc -c)

# ---------------------------------------------------------------- import, export, compare
"$tierfs" mkfs "${store[@]}" > /dev/null
"$tierfs" import "${store[@]}" --jobs 4 "$src" /data > "$work/out" 2> "$work/err" ||
  fail "import: $(cat "$work/out" "$work/err")"
grep -q "^tierfs import: $files files, $dirs directories, $links symlinks, " "$work/out" ||
  fail "import summary: $(cat "$work/out")"
grep -q "skipping '$src/nested/fifo': not a regular file" "$work/err" ||
  fail "no warning for the fifo: $(cat "$work/err")"
grep -q $'\r' "$work/err" && fail "a progress line was drawn on a stderr that is not a terminal"
"$tierfs" export "${store[@]}" /data "$work/exported" > "$work/out" 2> "$work/err" ||
  fail "export: $(cat "$work/out" "$work/err")"
grep -q "^tierfs export: $files files, $dirs directories, $links symlinks, " "$work/out" ||
  fail "export summary: $(cat "$work/out")"
same_tree "$work/src.manifest" "$work/exported" "import then export"
echo "ok: import and export of $files files and $links symlinks"

# ---------------------------------------------------------------- a subpath, a single file
"$tierfs" import "${store[@]}" "$src/nested" /deep/er/nested > /dev/null 2>&1 ||
  fail "import into a subpath"
manifest "$src/nested" > "$work/nested.manifest"
"$tierfs" export "${store[@]}" /deep/er/nested "$work/nested" > /dev/null 2>&1
same_tree "$work/nested.manifest" "$work/nested" "import into a subpath"
"$tierfs" export "${store[@]}" /deep/er "$work/deep" > /dev/null 2>&1
[[ $(ls -A "$work/deep") == nested ]] || fail "missing parents: $(ls -A "$work/deep")"
mkdir "$work/one"
"$tierfs" export "${store[@]}" /data/big.bin "$work/one" > /dev/null
cmp "$src/big.bin" "$work/one/big.bin" || fail "export of a file into a directory"
"$tierfs" export "${store[@]}" /data/nested/small.txt "$work/single.txt" > /dev/null
cmp "$src/nested/small.txt" "$work/single.txt" || fail "export of a file to a path"
[[ $(stat -c '%a %Y' "$work/single.txt") == $(stat -c '%a %Y' "$src/nested/small.txt") ]] ||
  fail "export of a file: mode or mtime"
echo "ok: subpaths and single files"

# ---------------------------------------------------------------- existing files
echo "changed" > "$src/nested/deeper/deepest/also empty"
touch -h -m -d "@978307200.5" "$src/nested/deeper/deepest/also empty"
set +e
"$tierfs" import "${store[@]}" "$src" /data > "$work/out" 2> "$work/err"; rc=$?
set -e
[[ $rc == 1 ]] || fail "import over existing files: rc=$rc"
grep -q "'/data/nested/deeper/deepest/also empty' exists in the volume (--overwrite" \
  "$work/err" || fail "refused overwrite: unclear message: $(head -c 2000 "$work/err")"
grep -q "FAILED" "$work/out" || fail "summary without failures: $(cat "$work/out")"
rm -rf "$work/again"
"$tierfs" export "${store[@]}" /data "$work/again" > /dev/null 2>&1
same_tree "$work/src.manifest" "$work/again" "a refused import changed the volume"
"$tierfs" import "${store[@]}" --overwrite "$src" /data > /dev/null 2>&1 || fail "--overwrite"
manifest "$src" > "$work/src2.manifest"
set +e
"$tierfs" export "${store[@]}" /data "$work/again" > /dev/null 2> "$work/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "'$work/again/big.bin' exists (--overwrite replaces it)" "$work/err" ||
  fail "export over existing files: rc=$rc $(head -c 2000 "$work/err")"
"$tierfs" export "${store[@]}" --overwrite /data "$work/again" > /dev/null 2>&1 ||
  fail "export --overwrite"
same_tree "$work/src2.manifest" "$work/again" "import --overwrite then export --overwrite"
echo "ok: existing files"

# ---------------------------------------------------------------- a failed file does not stop the copy
mkdir -p "$work/mix1/clash" "$work/mix2"
echo one > "$work/mix2/ok1"
echo clash > "$work/mix2/clash"  # a directory in the volume: not replaced, even with --overwrite
echo two > "$work/mix2/ok2"
if (( ! root )); then echo locked > "$work/mix2/unreadable" && chmod 000 "$work/mix2/unreadable"; fi
"$tierfs" import "${store[@]}" "$work/mix1" /mix > /dev/null 2>&1
set +e
"$tierfs" import "${store[@]}" --overwrite "$work/mix2" /mix > "$work/out" 2> "$work/err"; rc=$?
set -e
[[ $rc == 1 ]] || fail "a failed file: rc=$rc"
grep -q "'/mix/clash' exists in the volume and is a directory" "$work/err" ||
  fail "a failed file: unclear message: $(cat "$work/err")"
if (( ! root )); then
  grep -q "opening '$work/mix2/unreadable': Permission denied" "$work/err" ||
    fail "an unreadable file: unclear message: $(cat "$work/err")"
fi
"$tierfs" export "${store[@]}" /mix "$work/mix-out" > /dev/null 2>&1
[[ $(cat "$work/mix-out/ok1" "$work/mix-out/ok2") == $'one\ntwo' && -d "$work/mix-out/clash" ]] ||
  fail "a failed file stopped the others: $(ls -la "$work/mix-out")"
[[ ! -e "$work/mix-out/unreadable" ]] || fail "a file that could not be read was created"
echo "ok: a failed file is named and the others are copied"

# ---------------------------------------------------------------- compression from the config file
mkdir "$work/text"
cp "$src/compressible.txt" "$work/text/"
printf '[backend]\ntype = "dir"\n[backend.dir]\npath = "%s"\n[fs]\ncompression = "none"\n' \
  "$work/store" > "$work/tierfs.toml"
"$tierfs" import --config "$work/tierfs.toml" "$work/text" /raw > "$work/raw.out" 2>&1
"$tierfs" import "${store[@]}" "$work/text" /zstd > "$work/zstd.out" 2>&1
stored() { sed -nE 's/.*\(stored: ([0-9.]+) (B|KiB|MiB|GiB)\).*/\1 \2/p' "$1" |
  awk '{ m = $2 == "GiB" ? 2^30 : $2 == "MiB" ? 2^20 : $2 == "KiB" ? 2^10 : 1; print int($1 * m) }'; }
raw=$(stored "$work/raw.out") packed=$(stored "$work/zstd.out")
size=$(stat -c %s "$work/text/compressible.txt")
[[ -n $raw && -n $packed ]] && (( raw >= size * 99 / 100 && packed < size / 10 )) ||
  fail "compression: file $size, [fs] none stored '$raw', zstd stored '$packed'"
echo "ok: compression (none: $raw bytes stored, zstd: $packed, of $size)"

# ---------------------------------------------------------------- an import killed half-way
# Files appear whole (published with their content and attributes in one dentry update): after
# kill -9, every file in the volume is its source's, and fsck finds only chunks to remove.
mkdir -p "$work/many"
python3 - "$work/many" << 'PY'
import os, sys
for i in range(600):
    d = os.path.join(sys.argv[1], f"part{i % 4}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:04d}"), "wb") as f:
        f.write(os.urandom(300_000 + i))  # several chunks each: a kill lands between them too
PY
manifest "$work/many" | grep '"size"' | sed 's/"atime": [0-9]*, //' | sort > "$work/many.manifest"
killed=(--backend dir --path "$work/store-killed")
"$tierfs" mkfs "${killed[@]}" --chunk-size 256K > /dev/null  # two chunks a file
"$tierfs" import "${killed[@]}" --jobs 4 "$work/many" /many > /dev/null 2>&1 &
importer=$!
for _ in $(seq 300); do  # until a third of the chunks are in, at most 30 s
  (( $(find "$work/store-killed/data" -type f | wc -l) > 400 )) && break
  sleep 0.1
done
kill -9 "$importer"
wait "$importer" || true
"$tierfs" export "${killed[@]}" /many "$work/many-out" > /dev/null 2>&1 || fail "export after a kill"
manifest "$work/many-out" | grep '"size"' | sed 's/"atime": [0-9]*, //' | sort > "$work/many-out.manifest"
copied=$(wc -l < "$work/many-out.manifest")
(( copied < 600 )) || fail "the import ended before it was killed: make the tree larger"
comm -13 "$work/many.manifest" "$work/many-out.manifest" > "$work/partial"
[[ ! -s $work/partial ]] ||
  fail "files in the volume that are not their source's: $(head -c 2000 "$work/partial")"
set +e
"$tierfs" fsck "${killed[@]}" --min-age 0 > "$work/fsck.out" 2>&1; rc=$?
set -e
# Problems are lines "<state> <kind>: ..."; a kill between two publishes leaves none at all.
grep -E '^[a-z]+ +[a-z-]+: ' "$work/fsck.out" | grep -v -E '^found +orphan-chunk: ' > "$work/other" ||
  true
[[ $rc == 0 || $rc == 1 ]] && [[ ! -s $work/other ]] ||
  fail "fsck after a killed import: rc=$rc: $(head -c 2000 "$work/fsck.out")"
"$tierfs" fsck "${killed[@]}" --min-age 0 --repair > /dev/null 2>&1 || fail "fsck --repair"
"$tierfs" fsck "${killed[@]}" --min-age 0 > /dev/null 2>&1 || fail "fsck after --repair"
echo "ok: an import killed half-way ($copied of 600 files in): only whole files, orphans repaired"

# ---------------------------------------------------------------- errors
expect() {  # expect RC PATTERN COMMAND...
  local want=$1 pattern=$2 rc
  shift 2
  set +e
  "$@" > "$work/out" 2> "$work/err"; rc=$?
  set -e
  [[ $rc == "$want" ]] && grep -q -- "$pattern" "$work/err" ||
    fail "$*: rc=$rc (want $want), stderr: $(cat "$work/err")"
}
expect 2 "source '$work/no-such-dir': No such file or directory" \
  "$tierfs" import "${store[@]}" "$work/no-such-dir" /x
expect 1 "'/no/such/path' does not exist in the volume" \
  "$tierfs" export "${store[@]}" /no/such/path "$work/x"
expect 2 "has '..'" "$tierfs" import "${store[@]}" "$src" /a/../b
expect 2 "jobs" "$tierfs" import "${store[@]}" --jobs 0 "$src" /x
expect 2 "paths" "$tierfs" export "${store[@]}" /data
expect 1 "not a tierfs dir store" "$tierfs" import --backend dir --path "$work/nowhere" "$src" /x
echo "ok: errors"
echo "import_export: all checks passed"

# Sourced by .ci/run: cargo's target directory kept once per machine, outside the clone, as CI
# services keep a build cache. A fresh clone links `target` to it, so an unchanged dependency is
# not compiled again; cargo's own fingerprints decide what is stale (a clone's workspace crates
# are newer than anything cached and rebuild; nothing is taken from anywhere but this machine's
# earlier builds). A machine without the cache builds everything, as before.
#
# BUILD_CACHE_DIR moves it (default `$HOME/.cache/positions-api/target`); BUILD_CACHE_MAX_GIB
# bounds it (default 40: one full build, dev and arm64 release, is about 14 GB): past that it is
# emptied before the build. A fresh clone rebuilds every workspace crate (cargo tells a path
# crate by its path, and a clone's path is new), so the copies earlier clones left of the
# workspace's own crates, test binaries and functions (3 to 4 GB a run) are never used again:
# they are removed when a clone is linked, keeping the cache to the dependencies and one clone.
# A `target` already in the clone (a directory or a link) is used as it is.
build_cache_dir=${BUILD_CACHE_DIR:-$HOME/.cache/positions-api/target}
build_cache_max_gib=${BUILD_CACHE_MAX_GIB:-40}
if [ ! -e target ] && [ ! -L target ]; then
  mkdir -p "$build_cache_dir"
  used_gib=$(du -s --block-size=1G "$build_cache_dir" | cut -f1)
  if [ "$used_gib" -gt "$build_cache_max_gib" ]; then
    echo "build cache: ${used_gib} GiB, over ${build_cache_max_gib} GiB: emptied"
    rm -rf "$build_cache_dir"
    mkdir -p "$build_cache_dir"
  else
    echo "build cache: ${used_gib} GiB in use (at most ${build_cache_max_gib} GiB)"
  fi
  ln -s "$build_cache_dir" target
  # Every target of the workspace's packages, as cargo names their artifacts.
  workspace=$( (cargo metadata --no-deps --format-version 1 --offline || echo '{"packages": []}') | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    print(p["name"])
    for t in p["targets"]:
        print(t["name"].replace("-", "_"))
' | sort -u)
  for dir in target/debug target/release target/*/debug target/*/release; do
    [ -d "$dir" ] || continue
    rm -rf "$dir/incremental"
    for name in $workspace; do
      rm -rf "$dir/.fingerprint/$name-"* "$dir/build/$name-"* "$dir/deps/$name-"* "$dir/deps/lib$name-"*
    done
  done
  echo "build cache: earlier clones' workspace artifacts removed ($(du -s --block-size=1G "$build_cache_dir" | cut -f1) GiB kept)"
fi

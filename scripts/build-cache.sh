# Sourced first by .ci/run: CI builds in a checkout kept once per machine, as CI runners keep a
# project's build directory, so that a second run rebuilds only what changed.
#
# Cargo decides freshness by the files' times, and rustc's incremental caches are keyed by the
# directory a crate is compiled in: a fresh clone, at a new path with every file new, rebuilds
# every crate of the workspace whatever changed, while a developer's tree rebuilds what was
# edited. So this run's commit is checked out in the kept checkout: `git fetch` from the clone,
# `git checkout --force` (git rewrites only the files that differ, which alone become newer
# than what was built from them) and `git clean` (untracked files go; the build directory, the
# npm packages and the virtualenv links stay), and the run goes on there, with `../shared`
# beside it linked to the clone's. Every artifact cargo finds fresh was built from the same
# bytes; nothing is taken from anywhere but this machine's earlier runs.
#
# BUILD_CACHE_DIR moves the checkout (default `$HOME/.cache/positions-api/ci`; `off` runs in the
# clone, as a machine without the cache does); BUILD_CACHE_MAX_GIB bounds its `target` (default
# 40; one full build, dev and arm64 release, is about 11 GB): past that it is emptied first. A
# clone with uncommitted changes runs in place, where they are. Runs take turns (a lock, waited
# for an hour at most).
build_cache_dir=${BUILD_CACHE_DIR:-$HOME/.cache/positions-api/ci}
build_cache_max_gib=${BUILD_CACHE_MAX_GIB:-40}
if [ -n "${BUILD_CACHE_CHECKOUT:-}" ]; then
  if [ -d target ]; then
    used_gib=$(du -s --block-size=1G target | cut -f1)
    if [ "$used_gib" -gt "$build_cache_max_gib" ]; then
      echo "build cache: ${used_gib} GiB, over ${build_cache_max_gib} GiB: emptied"
      rm -rf target
    else
      echo "build cache: ${used_gib} GiB in use (at most ${build_cache_max_gib} GiB)"
    fi
  fi
elif [ "$build_cache_dir" = off ] || [ -n "$(git status --porcelain 2>/dev/null)" ] \
  || ! git rev-parse -q --verify HEAD >/dev/null; then
  echo "build cache: not used (BUILD_CACHE_DIR=off, uncommitted changes, or no commit): building in this clone"
else
  # The kept checkout at this clone's commit; fails (then the run stays here) if git cannot.
  checkout_commit() {
    local checkout="$build_cache_dir/repo"
    [ -d "$checkout/.git" ] || git init -q "$checkout" || return 1
    git -C "$checkout" fetch -q --no-tags "$PWD" HEAD || return 1
    git -C "$checkout" checkout -q --force --detach FETCH_HEAD || return 1
    git -C "$checkout" clean -q -ffdx -e /target -e node_modules -e '/.venv*' -e /.aws-sam \
      || return 1
    [ ! -e ../shared ] || ln -sfn "$(cd ../shared && pwd)" "$build_cache_dir/shared" || return 1
  }
  if mkdir -p "$build_cache_dir" 2>/dev/null && [ -w "$build_cache_dir" ]; then
    exec 9>"$build_cache_dir/lock"
    # Another run holds the checkout: wait for it, an hour at most (a run takes 10 to 20 min).
    if flock -w 3600 9 && checkout_commit; then
      echo "build cache: commit $(git rev-parse --short HEAD) checked out in $build_cache_dir/repo"
      cd "$build_cache_dir/repo"
      BUILD_CACHE_CHECKOUT=1 exec bash .ci/run "$@"
    fi
    exec 9>&-
  fi
  echo "build cache: no checkout in $build_cache_dir (busy, unwritable, or git failed): building in this clone"
fi

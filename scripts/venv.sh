# Sourced by the scripts that install pinned Python tools. `pinned_venv DIR REQUIREMENTS` makes
# DIR (in the clone) a virtualenv holding REQUIREMENTS: a link to one kept once per machine,
# outside the clone, named by the requirements file's hash (TOOLS_CACHE_DIR, default
# `$HOME/.cache/positions-api/venvs`), so that a fresh clone reuses an install an earlier run
# made with the same pins instead of installing again; a new pin makes a new one. A DIR that is
# a directory of its own (a developer's) is installed into as it is. Without the cache, it is
# made and installed once, as before.
pinned_venv() {
  local dir=$1 requirements=$2
  if [ -d "$dir" ] && [ ! -L "$dir" ]; then
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    return
  fi
  local hash cache
  hash=$(sha256sum "$requirements" | cut -c1-16)
  cache="${TOOLS_CACHE_DIR:-$HOME/.cache/positions-api/venvs}/$(basename "$dir")-$hash"
  if [ ! -f "$cache/.installed" ]; then
    rm -rf "$cache"
    mkdir -p "$(dirname "$cache")"
    python3 -m venv "$cache"
    "$cache/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    touch "$cache/.installed"
  fi
  ln -sfn "$cache" "$dir"
}

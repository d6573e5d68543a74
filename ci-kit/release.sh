#!/usr/bin/env bash
# Cuts a release of the suite from a clean checkout: ci-kit/release.sh VERSION [OUT]
#   1. checks that the tree is clean and that VERSION is the suite's own version (the
#      workspace's, Cargo.toml, as `stoat-conformance --version` prints it);
#   2. makes the tarball and its .sha256 (ci-kit/dist.sh) in OUT (default target/dist);
#   3. tags the commit `vVERSION` (annotated) and moves the major tag `vMAJOR` to it, the
#      tag the Action is pinned to (`uses: OWNER/stoat@v0`), so a workflow gets fixes
#      without edits and never a new major edition of its inputs;
#   4. prints what publishes it: pushing both tags and uploading the two files as the
#      release's assets (that needs the maintainers' credentials, so it is not done here).
# STOAT_DIST_BIN_DIR is passed on to dist.sh (binaries already built; the kit's test).
set -euo pipefail
die() { printf 'release: error: %s\n' "$*" >&2; exit 1; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
version="${1:-}"
out="${2:-$repo/target/dist}"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "usage: ci-kit/release.sh MAJOR.MINOR.PATCH [OUT]"
cd "$repo"
[ -z "$(git status --porcelain --untracked-files=no)" ] || die "the tree has uncommitted changes"
declared="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
[ "$declared" = "$version" ] || die "Cargo.toml says version $declared, not $version"
git rev-parse -q --verify "refs/tags/v$version" > /dev/null && die "tag v$version exists already"
tarball="$("$here/dist.sh" "$out" | tail -1)"
major="v${version%%.*}"
git tag -a "v$version" -m "stoat-conformance $version"
git tag -f -a "$major" -m "stoat-conformance $version (moving major tag)" > /dev/null
cat <<DONE
release: tagged v$version and moved $major to it; assets:
  $tarball
  $tarball.sha256
publish with:
  git push origin v$version && git push --force origin $major
  gh release create v$version "$tarball" "$tarball.sha256" --title "stoat-conformance $version" --generate-notes
DONE

#!/usr/bin/env bash
# Builds the Debian package of the static binary: dist/quayside_VERSION-1_amd64.deb.
# Installs cargo-deb (a build tool, not a crate dependency) if it is missing,
# brings the static binary up to date with packaging/build-static.sh, packages
# it with `cargo deb --no-build` from [package.metadata.deb] in Cargo.toml, then
# checks the archive: control fields, the files it must hold,
# the maintainer scripts, and that the packaged binary runs.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
target_dir=${CARGO_TARGET_DIR:-target}
binary="$target_dir/$target/release/quayside"

if ! cargo deb --version >/dev/null 2>&1; then
    echo "build-deb: installing cargo-deb"
    cargo install cargo-deb --locked
fi
# dpkg-deb checks the result; it is on every Debian system, but not everywhere.
command -v dpkg-deb >/dev/null 2>&1 || { echo "build-deb: dpkg-deb is required" >&2; exit 1; }

# Always through build-static.sh: cargo rebuilds only if a source changed (a
# no-op takes a second), so the package never holds a stale binary, and the
# script checks again that the binary has no dynamic dependency.
packaging/build-static.sh
[ -x "$binary" ] || { echo "build-deb: $binary missing after build-static.sh" >&2; exit 1; }

# cargo-deb prints the path of the .deb on stdout (progress goes to stderr).
deb=$(cargo deb --no-build --target "$target" | tail -n 1)
[ -f "$deb" ] || { echo "build-deb: cargo deb did not report a .deb (got: $deb)" >&2; exit 1; }

echo "== dpkg-deb --info $deb"
info=$(dpkg-deb --info "$deb")
echo "$info"
echo "== dpkg-deb --contents $deb"
contents=$(dpkg-deb --contents "$deb")
echo "$contents"

fail() { echo "build-deb: $*" >&2; exit 1; }
grep -q '^ Package: quayside$' <<<"$info" || fail "control file has no 'Package: quayside'"
grep -q '^ Architecture: amd64$' <<<"$info" || fail "control file is not for amd64"
# cargo-deb always writes a Depends field; for the static binary it must be empty.
if grep -Eq '^ Depends: *[^ ]' <<<"$info"; then
    fail "the static binary needs no runtime dependency, but: $(grep '^ Depends:' <<<"$info")"
fi
# The user is created by packaging/debian/postinst (useradd), not by a sysusers
# fragment, which would make the package depend on systemd.
grep -q 'systemd-sysusers' <<<"$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./postinst)" \
    && fail "postinst calls systemd-sysusers"
for script in postinst prerm postrm; do
    grep -Eq "^ +[0-9]+ bytes, +[0-9]+ lines +\* +$script " <<<"$info" \
        || fail "maintainer script $script missing or not executable"
done
grep -q '/etc/default/quayside' <<<"$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles)" \
    || fail "/etc/default/quayside is not a conffile"

# Each file the package must hold, with its mode.
expect() {
    local mode=$1 path=$2
    grep -Eq "^$mode [^ ]+ +[0-9]+ [0-9-]+ [0-9:]+ \./$path\$" <<<"$contents" \
        || fail "$path (mode $mode) missing from the package"
}
expect -rwxr-xr-x usr/bin/quayside
expect -rw-r--r-- usr/lib/systemd/system/quayside.service
expect -rw------- etc/default/quayside
expect -rw-r--r-- usr/share/doc/quayside/copyright
expect -rw-r--r-- usr/share/doc/quayside/README.Debian
expect -rw-r--r-- usr/share/doc/quayside/README.md

# The packaged binary itself (stripped by cargo-deb) must still run.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work"
version=$("$work/usr/bin/quayside" --version) || fail "the packaged binary does not run"
[ "$version" = "quayside $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)" ] \
    || fail "the packaged binary reports '$version'"
cmp -s "$work/usr/lib/systemd/system/quayside.service" packaging/quayside.service \
    || fail "the packaged unit differs from packaging/quayside.service"

mkdir -p dist
cp "$deb" dist/
echo "build-deb: dist/$(basename "$deb") ($(du -h "$deb" | cut -f1)); packaged binary: $version"

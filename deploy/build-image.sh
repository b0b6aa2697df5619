#!/usr/bin/env bash
# build-image.sh -- build svc's container image with podman and no
# container registry, as an air-gapped operator would: the Debian base is a
# debootstrap tree imported with podman import, the Go toolchain this
# machine's /usr/local/go imported likewise, then podman build runs
# deploy/Dockerfile with both as build arguments.
#
# usage: deploy/build-image.sh slim|full [TAG]     (as root, from anywhere)
#
#   slim  C, C++, Python                        -> localhost/svc:slim
#   full  every language of docs/languages.md   -> localhost/svc:full,
#         with the Go build cache prepared by `svc prepare` in a
#         privileged container and committed into the image
#
# It prints the image's size and, for full, what preparing took. It
# needs debootstrap, podman and runc (Debian's packages; it installs the
# missing ones), root, and Debian's mirror (DEBIAN_MIRROR, default the
# first URI of /etc/apt/sources.list.d/debian.sources) for apt inside the
# build, which runs with --network host.
#
# The base tree is kept as a tarball in SVC_IMAGE_CACHE (default
# /var/tmp/svc-image) and made again when it is missing; podman's own
# layer cache keeps the rest between runs.
set -euo pipefail

variant=${1:-}
case $variant in
slim | full) ;;
*)
	echo "usage: $0 slim|full [TAG]" >&2
	exit 2
	;;
esac
tag=${2:-localhost/svc:$variant}
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SVC_IMAGE_CACHE:-/var/tmp/svc-image}
suite=bookworm
recipe=2 # bump when the base tree's recipe below changes
base=localhost/svc-base:$suite-$recipe

die() {
	echo "build-image: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "run as root (rootful podman and debootstrap)"

need=()
for cmd in debootstrap podman runc; do
	command -v $cmd >/dev/null || need+=("$cmd")
done
if [ ${#need[@]} -gt 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
		die "cannot install ${need[*]}"
fi

# crun refuses hybrid cgroup v1 hosts; runc works on v1 and v2. podman's
# default ulimits may exceed the host's hard limits (runc then fails with
# "error setting rlimit"): at most the host's, and nproc at most 32768
# (on this machine kind runc's init may not raise it to the hard limit).
podman=(podman --runtime runc)
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}

# The base: a minbase tree with apt pointed at the mirror, imported.
if ! "${podman[@]}" image exists "$base"; then
	tarball=$cache/$suite-minbase-$recipe.tar
	if [ ! -s "$tarball" ]; then
		mkdir -p "$cache"
		tree=$cache/$suite.tmp
		rm -rf "$tree"
		echo "build-image: debootstrap $suite from $mirror (a few minutes, once)" >&2
		debootstrap --variant=minbase "$suite" "$tree" "$mirror" >&2 || die "debootstrap failed"
		cat >"$tree/etc/apt/sources.list" <<-EOF
			deb $mirror $suite main
			deb $mirror $suite-updates main
			deb $security $suite-security main
		EOF
		# As Debian's slim images: packages leave no .deb files behind
		# and install no documentation, manual pages or translations.
		cat >"$tree/etc/apt/apt.conf.d/docker-clean" <<-'EOF'
			DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
			APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
			Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
		EOF
		cat >"$tree/etc/dpkg/dpkg.cfg.d/docker-slim" <<-'EOF'
			path-exclude /usr/share/doc/*
			path-include /usr/share/doc/*/copyright
			path-exclude /usr/share/man/*
			path-exclude /usr/share/info/*
			path-exclude /usr/share/locale/*
			path-include /usr/share/locale/locale.alias
		EOF
		find "$tree/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
		rm -rf "$tree/usr/share/man/"* "$tree/usr/share/info/"* "$tree/var/lib/apt/lists/"* "$tree/var/cache/apt/"*.bin "$tree/var/cache/apt/archives/"*.deb
		find "$tree/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
		tar -C "$tree" --numeric-owner -cf "$tarball.tmp" .
		mv "$tarball.tmp" "$tarball"
		rm -rf "$tree"
	fi
	"${podman[@]}" import --change 'CMD ["bash"]' "$tarball" "$base" >/dev/null
fi

# The Go toolchain: this machine's, the version go.mod asks for or later.
goroot=${GOROOT_IMAGE_SRC:-/usr/local/go}
[ -x "$goroot/bin/go" ] || die "no Go toolchain in $goroot (set GOROOT_IMAGE_SRC)"
gover=$(awk 'NR == 1 {sub(/^go/, ""); print}' "$goroot/VERSION")
goimage=localhost/svc-go:$gover
if ! "${podman[@]}" image exists "$goimage"; then
	tar -C "$(dirname "$goroot")" --transform "s,^$(basename "$goroot"),usr/local/go," -cf - "$(basename "$goroot")" |
		"${podman[@]}" import - "$goimage" >/dev/null
fi

# The modules: downloaded on this machine (go.sum checks them), served
# to the build from the module cache as a file:// proxy.
modcache=$(cd "$repo" && "$goroot/bin/go" env GOMODCACHE)
(cd "$repo" && "$goroot/bin/go" mod download) || die "go mod download failed"

start=$(date +%s)
# The docker format: OCI image configs have no HEALTHCHECK.
"${podman[@]}" build --format docker --network host "${ulimits[@]}" \
	--volume "$modcache/cache/download:/goproxy:ro" \
	--build-arg GOPROXY=file:///goproxy --build-arg GOSUMDB=off \
	--build-arg BASE="$base" --build-arg GO_IMAGE="$goimage" \
	--target "$variant" -f "$repo/deploy/Dockerfile" -t "$tag" "$repo" >&2
echo "build-image: built $tag in $(($(date +%s) - start)) s" >&2

if [ "$variant" = full ]; then
	# The Go build cache, prepared in a sandbox: it takes the same
	# privileges as serving.
	name=svc-prepare-$$
	start=$(date +%s)
	"${podman[@]}" run --name "$name" --privileged "${ulimits[@]}" --network none \
		--entrypoint /usr/local/bin/svc "$tag" prepare >&2 || {
		"${podman[@]}" rm -f "$name" >/dev/null 2>&1
		die "svc prepare failed"
	}
	"${podman[@]}" commit --quiet --format docker \
		--change 'ENTRYPOINT ["/usr/local/bin/svc", "serve"]' --change 'CMD []' \
		"$name" "$tag" >/dev/null
	"${podman[@]}" rm -f "$name" >/dev/null
	echo "build-image: prepared the Go build cache in $(($(date +%s) - start)) s" >&2
fi

size=$("${podman[@]}" image inspect --format '{{.Size}}' "$tag")
echo "build-image: $tag is $((size / 1000000)) MB" >&2
echo "$tag"

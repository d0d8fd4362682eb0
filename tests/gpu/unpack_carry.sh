#!/usr/bin/env bash
# unpack_carry.sh - on the GPU machine, first: every .carry/NAME.xz (or DIR/NAME.xz) becomes DIR/NAME.gz, the
# form the job scripts unpack. Binaries travel as xz (-6: a stripped static decodelab is ~6.8 MB, gzip -9
# ~14 MB) since the tree and the carried paths together must stay under the device call's 64 MiB; the GPU
# image's Python unpacks xz (lzma), whatever its xz tool. Usage: bash tests/gpu/unpack_carry.sh [DIR...]
# (default .carry); exits 2 naming a file that does not unpack.
set -uo pipefail
dirs=("$@"); [ ${#dirs[@]} -gt 0 ] || dirs=(.carry)
for d in "${dirs[@]}"; do
    for f in "$d"/*.xz; do
        [ -e "$f" ] || continue
        python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$f" 2> /dev/null |
            gzip -1 > "${f%.xz}.gz.part" && mv "${f%.xz}.gz.part" "${f%.xz}.gz" ||
            { rm -f "${f%.xz}.gz.part"; echo "unpack_carry: $f does not unpack (not an xz file?); nothing written for it" >&2; exit 2; }
    done
done

#!/bin/sh
# The layer rule, checked: a folder includes only itself and the folders its
# README.md names on its "May include:" line (docs/ARCHITECTURE.md, "The
# layers"). Includes are written from the project root ("sim/engine/engine.h")
# or bare for a file of the same folder. Also fails on an include of a
# project header that does not exist (a file left at an old path).
# Run from the project root; prints each violation and exits 1 if any.
set -u
bad=0; checked=0
for f in $(find sim hardware models viz -name '*.[ch]' | sort); do
    dir=$(dirname "$f")
    readme="$dir/README.md"
    if [ ! -f "$readme" ]; then
        echo "layers: $dir has no README.md saying what it may include"; bad=$((bad + 1)); continue
    fi
    allowed=$(sed -n 's/^May include: *//p' "$readme" | sed 's/(.*//')
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        checked=$((checked + 1))
        case "$inc" in
            */*) target=$(dirname "$inc"); path=$inc ;;
            *)   target=$dir; path="$dir/$inc" ;;
        esac
        if [ ! -f "$path" ]; then
            echo "layers: $f includes \"$inc\", which is not a file of the project"; bad=$((bad + 1)); continue
        fi
        [ "$target" = "$dir" ] && continue
        ok=0
        for a in $allowed; do [ "$a" = "$target" ] && ok=1; done
        if [ $ok -eq 0 ]; then
            echo "layers: $f includes $inc: $dir may include only itself and: ${allowed:-nothing} ($readme)"
            bad=$((bad + 1))
        fi
    done
done
echo "layers: $checked includes checked, $bad violations"
[ $bad -eq 0 ]

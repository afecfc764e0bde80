'use strict';

// CommonJS on purpose: the hello example needs one CJS dependency imported
// from ESM, as most real runtimes have.

function columns(rows, gap) {
  const sep = ' '.repeat(gap === undefined ? 2 : gap);
  const width = rows.reduce((w, r) => Math.max(w, r[0].length), 0);
  return rows.map((r) => r[0].padEnd(width) + sep + r[1]).join('\n');
}

function indent(text, n) {
  const pad = ' '.repeat(n);
  return text.split('\n').map((l) => (l ? pad + l : l)).join('\n');
}

module.exports = { columns, indent };

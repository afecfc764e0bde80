export function banner(title) {
  const line = '+' + '-'.repeat(title.length + 2) + '+';
  return [line, '| ' + title + ' |', line].join('\n');
}
//# sourceMappingURL=index.js.map

export const describe = (words) => "pi-fp-bundled says " + words.join(" and ");

export const join = (words) => words.join(" ");

export const upper = (word) => word.toUpperCase();

export const hello = "hello";

export const prefix: string = "pi-fp-typed says";

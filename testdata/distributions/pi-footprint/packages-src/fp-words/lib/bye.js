export const bye = "bye";

export const unused = "not in the exports map";

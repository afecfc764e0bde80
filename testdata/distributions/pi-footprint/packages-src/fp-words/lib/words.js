import { hello } from "./hello.js";
import { bye } from "./bye.js";
export const words = [hello, bye];

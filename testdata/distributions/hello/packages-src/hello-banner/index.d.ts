/** Returns title inside an ASCII box, three lines joined by "\n". */
export declare function banner(title: string): string;

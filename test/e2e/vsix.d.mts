/** Types of vsix.mjs (shared by the e2e run and client/test/vsix.test.ts). */
export declare const VSIX_FILES: string[];
export declare const VSIX_MAX_BYTES: number;
export declare const VSCE_PACKAGE_ARGS: string[];
export declare function zipEntries(file: string): string[];
export declare function checkVsix(vsix: string): Promise<{ bytes: number; files: string[] }>;

// `node --import ./record-modules.mjs …`: every module the process resolves (static or dynamic
// import) is appended to the file named by LONGBUILD_RECORD_MODULES, one URL a line — a test
// sees what a command loads (decision 0022: reading commands load no event schemas).
import { register } from 'node:module';

register('./record-modules-hooks.mjs', import.meta.url);

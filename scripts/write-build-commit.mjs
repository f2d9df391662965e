// Run by `npm run build` after tsc: writes the commit the build is made from beside the built
// code, which /healthz answers (src/version.ts): BUILD_COMMIT when given (a build without the
// repository, as in deploy/Dockerfile), else the checkout's, else `unknown`.
import { writeFileSync } from 'node:fs';
import { projectRoot } from '../dist/src/paths.js';
import { BUILD_COMMIT_FILE, checkoutCommit, isCommit } from '../dist/src/version.js';

const given = process.env.BUILD_COMMIT ?? '';
if (given && !isCommit(given)) throw new Error(`BUILD_COMMIT ${given} is not 7 to 40 lowercase hex digits`);
const commit = given || checkoutCommit(projectRoot);
writeFileSync(new URL(`../dist/src/${BUILD_COMMIT_FILE}`, import.meta.url), `${commit}\n`);

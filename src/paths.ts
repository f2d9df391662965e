// Files shipped beside the code (migrations, reference data) are found from the project root,
// which is the nearest folder above this module with a package.json: the same from `src/` under
// tsx and from `dist/src/` when built.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findProjectRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

export const projectRoot = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));
export const migrationsDir = path.join(projectRoot, 'migrations');
export const referenceDataDir = path.join(projectRoot, 'reference-data');
/** The partner guide, served as the integrations host's `/docs/` page. */
export const partnerGuideFile = path.join(projectRoot, 'docs/partners.md');
/** Its Arabic translation, served at `/docs/ar/`; it shows the pictures beside the English guide. */
export const arabicPartnerGuideFile = path.join(projectRoot, 'docs/ar/partners.md');
/** The guide's payment-flow diagram, beside it (docs/payment-flow.svg). */
export const PAYMENT_FLOW_PICTURE = 'payment-flow.svg';
/** `npm run generate:partner-tools` writes it; the integrations host serves it at `/docs/partner-tools.mjs`. */
export const partnerToolsFile = path.join(projectRoot, 'clients/partner-tools/partner-tools.mjs');

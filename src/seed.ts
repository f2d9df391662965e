// First-start data. Runs after migrations, under the schema lock, on every start: each seeder
// checks for itself whether its data is already there, so a restart changes nothing.

import type { AppContext } from './context.js';
import { seedReferenceData } from './geo/index.js';
import type { Logger } from './logger.js';
import { seedDefaultPrompts } from './prompts/index.js';

type Seeder = (context: AppContext, logger: Logger) => Promise<void>;

const SEEDERS: Seeder[] = [seedReferenceData, seedDefaultPrompts];

export async function seedEmptyDatabase(context: AppContext, logger: Logger): Promise<void> {
  for (const seed of SEEDERS) await seed(context, logger);
}

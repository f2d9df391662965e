// What every host and worker is given: validated configuration, the database and the secret box.
import type { Config } from './config.js';
import type { Database, DatabaseHandle } from './db/client.js';
import type { SecretBox } from './tenants/secret-box.js';

export interface AppContext {
  config: Config;
  database: DatabaseHandle;
  db: Database;
  secretBox: SecretBox;
}

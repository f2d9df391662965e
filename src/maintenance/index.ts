// Running the service for years: online backups and their restore, and retention.
export {
  BACKUP_FORMAT,
  BackupError,
  type BackupSummary,
  isEmptyDatabase,
  restoreBackup,
  writeBackup,
} from './backup.js';
export { prune, type RetentionRule, type RetentionSettings, retentionRules, schedulePrune } from './retention.js';

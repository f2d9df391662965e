// `POST /admin/v1/backups`: a consistent online backup of the database, streamed as it is taken
// (src/maintenance/backup.ts); `partnerctl backup FILE` saves it. An admin's: it holds every digest
// and sealed secret.
import { PassThrough } from 'node:stream';
import { BACKUP_FORMAT, writeBackup } from '../../maintenance/index.js';
import { keysOfSealedSecrets } from '../../tenants/index.js';
import { route } from '../route.js';

export const BACKUP_MEDIA_TYPE = `application/vnd.${BACKUP_FORMAT}`;

export const adminBackupRoutes = [
  route({
    method: 'POST',
    url: '/backups',
    config: { operatorRole: 'admin' },
    schema: {
      operationId: 'takeBackup',
      tags: ['operations'],
      summary: 'Stream a consistent backup of the database, taken while the service serves',
      description:
        'One snapshot of every table (a REPEATABLE READ READ ONLY transaction), streamed as it is read. ' +
        'The file ends with a record of the rows per table: a file without it is incomplete. Its first line names ' +
        'the encryption keys its signing secrets need (`sealed_with`: key fingerprints). ' +
        'Restore with `partnerctl restore FILE` into an empty database.',
      produces: [BACKUP_MEDIA_TYPE],
      response: {
        200: {
          description: 'The backup file',
          content: { [BACKUP_MEDIA_TYPE]: { schema: { type: 'string', format: 'binary' } } },
        },
      },
    },
    handler: (context) => async (request, reply) => {
      const body = new PassThrough();
      const started = Date.now();
      const sealedWith = await keysOfSealedSecrets(context.db, context.secretBox);
      writeBackup(context.database, body, sealedWith).then(
        (summary) => {
          request.log.info({ backup: { ...summary, ms: Date.now() - started } }, 'backup taken');
          body.end();
        },
        (error) => {
          // The answer has started: cutting it short leaves a file without its end record, which
          // partnerctl and the restore refuse.
          request.log.error({ err: error }, 'backup failed');
          body.destroy(error);
        },
      );
      return reply
        .type(BACKUP_MEDIA_TYPE)
        .header(
          'content-disposition',
          `attachment; filename="backup-${new Date().toISOString().replace(/[:.]/g, '')}.pib"`,
        )
        .send(body);
    },
  }),
];

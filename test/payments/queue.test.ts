// The payment request queue's take, as the database runs it.
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../support/apps.js';

describe('take_payment_requests', () => {
  const opened = useTestContext();

  it('commits to disk before its requests leave: its transaction ends with synchronous_commit on', async () => {
    // A take committed without waiting for the disk was lost in a database crash while its
    // requests were on their way, and they were taken and sent again after the restart.
    const setting = await opened.context.database.driverTransaction('read write', async (tx) => {
      await tx`select * from take_payment_requests('payment-request', 1, 8, 'test-worker', 86400, 120, 0)`;
      const [row] = await tx`select current_setting('synchronous_commit') as setting`;
      return row.setting;
    });
    expect(setting).toBe('on');
  });
});

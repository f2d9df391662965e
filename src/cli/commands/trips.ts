// partnerctl commands for trips (admin API clients).
import { type Command, positional, readNamedJsonFile, required } from '../command.js';
import { type Row, record } from '../output.js';

export const tripCommands: Command[] = [
  {
    name: 'trips create',
    summary: "Create a tenant's trip; --file adds fields from a JSON object (destinations, itinerary)",
    usage:
      '--tenant TENANT_ID --title TITLE [--mode live|test] [--start DATE] [--end DATE] [--adults N] [--children N] [--file FILE]',
    options: {
      tenant: { type: 'string' },
      title: { type: 'string' },
      mode: { type: 'string' },
      start: { type: 'string' },
      end: { type: 'string' },
      adults: { type: 'string' },
      children: { type: 'string' },
      file: { type: 'string' },
    },
    async run(invocation) {
      const { options } = invocation;
      const fromFile = typeof options.file === 'string' ? (readNamedJsonFile(options.file) as object) : {};
      const travelers = Object.fromEntries(
        ['adults', 'children']
          .filter((name) => typeof options[name] === 'string')
          .map((name) => [name, Number(options[name])]),
      );
      const { trip } = await invocation.admin().request<{ trip: Row }>('POST', '/trips', {
        ...fromFile,
        tenant_id: required(options, 'tenant'),
        title: required(options, 'title'),
        ...(typeof options.mode === 'string' && { mode: options.mode }),
        ...(typeof options.start === 'string' && { start_date: options.start }),
        ...(typeof options.end === 'string' && { end_date: options.end }),
        ...(Object.keys(travelers).length > 0 && { travelers }),
      });
      invocation.output(record(trip), { trip });
    },
  },
  {
    name: 'trips show',
    summary: 'Show a trip, with its latest invoice',
    usage: 'TRIP_ID',
    async run(invocation) {
      const { trip } = await invocation
        .admin()
        .request<{ trip: Row }>('GET', `/trips/${positional(invocation, 0, 'trip id')}`);
      invocation.output(record(trip), { trip });
    },
  },
];

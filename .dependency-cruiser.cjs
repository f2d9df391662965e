/**
 * Layer rules (`npm run lint`; docs/architecture.md): the domains (tenants, prompts, geo, trips,
 * payments, audit, operators, maintenance) hold the rules and know nothing of HTTP, the CLI or the service's wiring, and
 * each is used from outside through its index.ts only; each host is a thin skin that never reaches
 * into another host; shapes shared by hosts live in src/http/ itself; no import cycles.
 */
const DOMAINS = '^src/(tenants|prompts|geo|trips|payments|audit|operators|maintenance)/';
const HOSTS = '^src/http/(integrations|backend|admin|portal)/';

module.exports = {
  forbidden: [
    {
      name: 'domain-not-http',
      severity: 'error',
      comment: 'A domain module must not know Fastify: return domain results, let the host speak HTTP.',
      from: { path: DOMAINS },
      to: { path: ['^node_modules/(fastify|@fastify/)', '(^|/)fastify/'] },
    },
    {
      name: 'domain-not-outer-layers',
      severity: 'error',
      comment: 'Domains are called by the hosts, the CLI and the wiring, never the other way round.',
      from: { path: DOMAINS },
      to: { path: ['^src/http/', '^src/cli/', '^src/context\\.ts$', '^src/server\\.ts$', '^src/seed\\.ts$'] },
    },
    {
      name: 'domain-entry-point',
      severity: 'error',
      comment: 'Outside a domain, use what its index.ts exports: its other files are its own business.',
      from: { path: '^(src/[^/]+/|src/[^/]+\\.ts$)' },
      to: { path: DOMAINS, pathNot: ['^$1', '/index\\.ts$'] },
    },
    {
      name: 'host-not-other-host',
      severity: 'error',
      comment: "One host never imports another host's files: shared shapes go to src/http/ itself.",
      from: { path: '^src/http/([^/]+)/' },
      to: { path: HOSTS, pathNot: '^src/http/$1/' },
    },
    {
      name: 'http-shared-not-host',
      severity: 'error',
      comment: 'What src/http/ shares with every host must not depend on one of them.',
      from: { path: '^src/http/[^/]+\\.ts$' },
      to: { path: HOSTS },
    },
    {
      name: 'core-not-outer-layers',
      severity: 'error',
      comment: 'The database layer, config, errors and caches are below the domains and the hosts.',
      from: {
        path: '^src/(db/|config\\.ts|errors\\.ts|cache\\.ts|logger\\.ts|tracing\\.ts|paths\\.ts|text\\.ts|languages\\.ts)',
      },
      to: { path: [DOMAINS, '^src/http/', '^src/cli/', '^src/context\\.ts$', '^src/server\\.ts$'] },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles make the layers meaningless.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};

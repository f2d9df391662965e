// The deployment examples in deploy/ that the suite cannot run (deploy/nginx/ runs in the fault
// suite): the systemd unit passes `systemd-analyze verify`, and the unit and the container recipe
// start the service exactly as `npm run serve` does, as an unprivileged user, with a health check.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';

const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
const UNIT = 'deploy/systemd/partner-integrations.service';
const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';
/** `npm run serve`'s command line without `node`: the flags and the entry point. */
const serveArguments = JSON.parse(read('package.json')).scripts.serve.replace(/^node /, '');

describe('the systemd unit', () => {
  it.skipIf(!existsSync(SYSTEMD_ANALYZE))('passes systemd-analyze verify', () => {
    // Throws with systemd's complaints on any error (a bad directive, ExecStart not executable).
    const output = execFileSync(SYSTEMD_ANALYZE, ['verify', path.join(projectRoot, UNIT)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(output).toBe('');
  });
  if (!existsSync(SYSTEMD_ANALYZE)) console.log(`${SYSTEMD_ANALYZE} not found: the unit is not verified here`);

  it('runs the service as npm run serve does, as its own user', () => {
    const unit = read(UNIT);
    expect(unit).toContain(`\nExecStart=/usr/bin/node ${serveArguments}\n`);
    expect(unit).toMatch(/\nUser=partner-integrations\n/);
    expect(unit).toMatch(/\nKillSignal=SIGTERM\n/);
  });
});

describe('the container recipe', () => {
  const dockerfile = read('deploy/Dockerfile');

  it('builds in one stage and runs from another, unprivileged, with a health check on /readyz', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^RUN npm ci .*\n/m);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK [^\n]*\\\n\s+CMD [^\n]*\/readyz/m);
    const cmd = JSON.parse(dockerfile.match(/^CMD (\[.*\])$/m)![1]) as string[];
    expect(cmd.join(' ')).toBe(`node ${serveArguments}`);
  });

  it('copies every file package.json ships (what the service reads at run time) into the image', () => {
    const runStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const sources = [...runStage.matchAll(/^COPY (?:--from=build \/app\/)?(\S+) /gm)].map((match) =>
      match[1].replace(/\/$/, ''),
    );
    const files: string[] = JSON.parse(read('package.json')).files;
    const missing = files.filter((file) => !sources.some((source) => file.replace(/\/$/, '').startsWith(source)));
    expect(missing).toEqual([]);
  });
});

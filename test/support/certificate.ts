// A self-signed certificate for the tests that serve TLS, made with openssl (which .ci/run installs).
import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** Writes into `dir` a certificate for `names` (the first one its subject) and its key: their paths. */
export function selfSignedCertificate(dir: string, names: string[]): { cert: string; key: string } {
  const cert = path.join(dir, 'certificate.pem');
  const key = path.join(dir, 'certificate.key');
  const subjectAltName = names.map((name) => `DNS:${name}`).join(',');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${names[0]}`,
      '-addext',
      `subjectAltName=${subjectAltName}`,
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

// Start `strata --serve` on a free port for a test and stop it after: the
// command's path and the model come from argv ([node, script, STRATA_BIN,
// MODEL, ...]).  A test whose npm packages (tests/web/node_modules, from
// `npm ci --prefix tests/web`) or model are absent exits 77: skipped.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));

export function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

export function needPackages(...names) {
  for (const n of names) {
    if (!existsSync(join(here, 'node_modules', n))) {
      skip(`npm package ${n} is absent (tools/test.sh installs it: npm ci --prefix tests/web)`);
    }
  }
}

// The server for this test, with extra flags; resolves {url, port, stop}.
export async function startServer(extra = []) {
  const [bin, model] = process.argv.slice(2);
  if (!bin || !model) skip('usage: node TEST.mjs STRATA_BIN MODEL');
  if (!existsSync(model)) skip(`the model ${model} is absent`);
  const child = spawn(bin, ['-c', join(here, '../../strata.ini'), '-m', model, '-t', '1',
    '--serve', '--port', '0', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no server after 60 s:\n${log}`)), 60000);
    child.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.on('exit', (code) => reject(new Error(`strata exited ${code}:\n${log}`)));
  });
  child.removeAllListeners('exit');
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    log: () => log,
    stop: () => new Promise((resolve) => {
      child.on('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    }),
  };
}

// Run named async checks in order; exit 1 at the first failure (with the server's log).
export async function run(server, checks) {
  let failed = 0;
  for (const [name, fn] of checks) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e.stack || e}`);
    }
  }
  const code = await server.stop();
  if (code !== 0) {
    console.log(`FAIL strata exited ${code} on SIGTERM`);
    failed++;
  }
  if (failed) console.log(server.log().slice(-4000));
  process.exit(failed ? 1 : 0);
}

export function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}

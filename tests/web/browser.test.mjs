// The web app in a real browser (Debian's chromium driven by npm's
// playwright-core): the chat page streams an answer from stories260K and
// keeps the conversation across a reload; the monitor page shows the
// figures of that generation from /metrics.  Screenshots of both pages go
// to the folder given as the third argument (default: the working folder).
// Without playwright-core or /usr/bin/chromium the test exits 77.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { assert, needPackages, run, skip, startServer } from './serve.mjs';

const CHROMIUM = '/usr/bin/chromium';
if (Number(process.versions.node.split('.')[0]) < 20) skip(`playwright-core needs node >= 20, not ${process.version}`);
needPackages('playwright-core');
if (!existsSync(CHROMIUM)) skip(`${CHROMIUM} is absent (tools/deps.sh installs Debian's chromium)`);
const { chromium } = await import('playwright-core');

const shots = process.argv[4] || '.';
mkdirSync(shots, { recursive: true });
const server = await startServer(['--chat-template', 'chatml']);
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
// Nothing leaves the machine: every request the pages make goes to the server.
page.on('request', (r) => {
  if (!r.url().startsWith(server.url)) problems.push(`request outside the server: ${r.url()}`);
});

const lastAnswer = () => page.locator('.msg.assistant .content').last();

await run({
  ...server,
  stop: async () => { await browser.close(); return server.stop(); },
}, [
  ['the chat page streams an answer', async () => {
    await page.goto(`${server.url}/`);
    await page.click('#toggle-settings');
    await page.fill('#max_tokens', '24');
    await page.fill('#temperature', '0');
    await page.fill('#input', 'Once upon a time');
    await page.click('#send');
    await page.waitForFunction(() => {
      const a = document.querySelectorAll('.msg.assistant .content');
      return a.length && a[a.length - 1].textContent.length > 0 &&
        !document.getElementById('send').disabled;
    }, null, { timeout: 60000 });
    const text = await lastAnswer().textContent();
    assert(text.trim().length > 0, 'an answer');
    assert(await page.locator('.msg.user .content').last().textContent() === 'Once upon a time',
      'the question shown');
    await page.screenshot({ path: join(shots, 'chat.png') });
  }],
  ['the conversation survives a reload', async () => {
    const before = await lastAnswer().textContent();
    await page.reload();
    await page.waitForSelector('.msg.assistant .content');
    assert(await lastAnswer().textContent() === before, 'same answer after reload');
    assert(await page.locator('#conversations li').count() >= 1, 'listed');
  }],
  ['the monitor shows that generation', async () => {
    await page.goto(`${server.url}/monitor`);
    await page.waitForFunction(() => document.getElementById('decode').textContent !== '-',
      null, { timeout: 30000 });
    const decode = Number.parseFloat(await page.locator('#decode').textContent());
    assert(decode > 0, `decode tok/s ${decode}`);
    const tokens = await page.locator('#tokens').textContent();
    assert(/\d/.test(tokens), `tokens "${tokens}"`);
    await page.waitForTimeout(2500); // a second poll, so the chart has a line
    await page.screenshot({ path: join(shots, 'monitor.png'), fullPage: true });
  }],
  ['no page errors, nothing fetched from elsewhere', async () => {
    assert(problems.length === 0, problems.join('\n'));
  }],
]);

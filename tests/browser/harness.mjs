// What the browser tests share: steps with budgets, secrets kept out of
// what they print, Debian's Chromium through playwright-core, and a
// notebook opened from its access link to a cell that prints 42.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium } from 'playwright-core';

// Each step's budget: generous, for CI's 2 shared cores.
export const STEP_MS = Number(process.env.EINSORA_BROWSER_STEP_MS) || 120_000;
export const CHROMIUM = '/usr/bin/chromium';

// Each test adds its own members.
export const state = {
  dirs: [], // temp directories to remove
  context: null, // playwright BrowserContext
  secrets: new Map(), // name -> value, never printed, never allowed in the log
  step: 'starting',
  screenshotPrefix: 'einsora-browser-test',
};

export function note(message) {
  for (const line of redact(String(message)).split('\n'))
    process.stdout.write(`# ${line}\n`);
}

export function redact(text) {
  for (const [name, value] of state.secrets)
    if (value) text = text.split(value).join(`<${name}>`);
  return text;
}

export class Failure extends Error {}

export function fail(message) {
  throw new Failure(message);
}

export function check(condition, message) {
  if (!condition) fail(message);
}

// One step, within its budget.
export async function step(name, body) {
  state.step = name;
  note(`${name}...`);
  const started = Date.now();
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(`${name}: no result within ${STEP_MS / 1000} s`)),
      STEP_MS);
  });
  try {
    return await Promise.race([body(), timeout]);
  } finally {
    clearTimeout(timer);
    note(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

export function makeTempDir(prefix, parent = os.tmpdir()) {
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  fs.chmodSync(dir, 0o700);
  state.dirs.push(dir);
  return dir;
}

export async function waitFor(what, probe, interval = 100) {
  const deadline = Date.now() + STEP_MS;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline)
      fail(typeof what === 'function' ? what() : `${what}: not within ${STEP_MS / 1000} s`);
    await sleep(interval);
  }
}

export function statePid(file) {
  let section = null;
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    const header = /^\[(.*)\]$/.exec(line);
    if (header) section = header[1];
    else if (section === 'process' && line.startsWith('pid=')) return Number(line.slice(4));
  }
  return null;
}

export function workloadToken(runDir, id) {
  const pid = statePid(path.join(runDir, `${id}.state`));
  check(pid > 1, `${id}.state names no [process] pid`);
  const environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
  const entry = environ.find((item) => item.startsWith('JUPYTER_TOKEN='));
  check(entry, `the server (pid ${pid}) has no JUPYTER_TOKEN in its environment`);
  const token = entry.slice('JUPYTER_TOKEN='.length);
  check(token.length >= 16, `the server's JUPYTER_TOKEN is too short to look for`);
  return token;
}

export function artifactDir() {
  const dir = process.env.EINSORA_TEST_ARTIFACTS || process.env.EINSORA_TEST_LOG_DIR;
  if (!dir) return null;
  try {
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  } catch {
    return null;
  }
}

export async function screenshot(page, name) {
  const dir = artifactDir();
  if (!dir || !page || page.isClosed()) return;
  const file = path.join(dir, `${state.screenshotPrefix}-${name}.png`);
  try {
    await page.screenshot({ path: file, fullPage: true, timeout: 15_000 });
    note(`screenshot: ${file}`);
  } catch (error) {
    note(`no screenshot ${name}: ${error.message}`);
  }
}

export async function launchBrowser(dir) {
  const root = process.getuid?.() === 0;
  const args = [
    '--headless',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ];
  if (root) args.push('--no-sandbox');
  check(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium ` +
    '(packaging/dev/deps.sh test)');
  // A new, empty profile: playwright passes it as --user-data-dir.
  const profile = path.join(dir, 'chromium-profile');
  fs.mkdirSync(profile, { mode: 0o700 });
  state.context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: !root,
    args,
    viewport: { width: 1280, height: 900 },
    timeout: STEP_MS,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  state.context.setDefaultTimeout(STEP_MS);
  state.context.setDefaultNavigationTimeout(STEP_MS);
  note(`chromium ${state.context.browser()?.version() ?? ''}`);
  return state.context;
}

export async function expectNoSecretsIn(page, where, host) {
  const url = new URL(page.url());
  check(url.hostname === host, `${where}: the page is at ${url.host}, not ${host}`);
  const cookies = await page.evaluate(() => document.cookie);
  check(!cookies.includes('einsora_access'),
    `${where}: document.cookie shows einsora_access, which must be HttpOnly`);
  const html = await page.content();
  for (const [name, value] of state.secrets) {
    check(!html.includes(value), `${where}: the page's HTML holds the ${name}`);
    check(!page.url().includes(value), `${where}: the page's URL holds the ${name}`);
  }
}

// Opens @link (a notebook's one-time access link) in @context: the
// notebook tree at @host, the session cookie host-only and HttpOnly, then
// a new notebook whose first cell prints 42. Keeps the cookie's value as a
// secret; returns the two pages.
export async function openAndRunCell(context, link, host) {
  const tree = context.pages()[0] ?? await context.newPage();
  let notebook = null;
  try {
    await step('open the access link: the notebook tree', async () => {
      const response = await tree.goto(link, { waitUntil: 'load' });
      check(response && response.ok(), `GET the access link: ${response?.status()}`);
      // The ticket page refreshes to "/", which Jupyter redirects to its
      // tree: the proxy passes the redirect on, so the browser lands on
      // /tree at the workload's own address.
      await tree.waitForURL((url) => url.hostname === host &&
        url.pathname === '/tree', { waitUntil: 'load' });
      await tree.locator('#new-dropdown-button').waitFor({ state: 'visible' });
      // The kernel list comes from /api/kernelspecs.
      await tree.locator('#new-menu a[title^="Create a new notebook with Python 3"]')
        .waitFor({ state: 'attached' });
    });
    await screenshot(tree, 'tree');

    const cookies = await context.cookies();
    const session = cookies.find((cookie) => cookie.name === 'einsora_access');
    check(session, `no einsora_access cookie after opening the link (cookies: ` +
      `${cookies.map((cookie) => cookie.name).join(', ') || 'none'})`);
    state.secrets.set('session cookie', session.value);
    check(session.domain === host, `einsora_access is for ${session.domain}, not just ${host}`);
    check(session.httpOnly, 'einsora_access is not HttpOnly');
    check(session.sameSite === 'Strict', `einsora_access is SameSite=${session.sameSite}`);
    await expectNoSecretsIn(tree, 'the tree page', host);

    notebook = await step('create a notebook: New -> Python 3 (ipykernel)', async () => {
      const entry = tree.locator('#new-menu a[title^="Create a new notebook with Python 3"]');
      // A click before Bootstrap's handlers are bound opens nothing: again.
      await waitFor('the New menu open', async () => {
        await tree.locator('#new-dropdown-button').click();
        return entry.waitFor({ state: 'visible', timeout: 5_000 }).then(() => true, () => false);
      });
      // Jupyter opens the notebook in a new window.
      const [page] = await Promise.all([context.waitForEvent('page'), entry.click()]);
      await page.waitForURL((url) => url.hostname === host &&
        /^\/notebooks\/.*\.ipynb$/.test(url.pathname), { waitUntil: 'load' });
      // The kernel is connected (a WebSocket through the proxy) and idle.
      await page.locator('#kernel_indicator_icon.kernel_idle_icon').waitFor({ state: 'attached' });
      return page;
    });

    await step('run print(6*7)', async () => {
      const editor = notebook.locator('.cell').first().locator('.CodeMirror');
      await editor.click();
      await notebook.keyboard.type('print(6*7)');
      const source = await editor.evaluate((element) => element.CodeMirror.getValue());
      check(source === 'print(6*7)', `the cell holds ${JSON.stringify(source)}`);
      await notebook.keyboard.press('Shift+Enter');
      await notebook.locator('.output_area .output_subarea')
        .filter({ hasText: /^\s*42\s*$/ }).first().waitFor({ state: 'visible' });
    });
    await screenshot(notebook, 'notebook');
    await expectNoSecretsIn(notebook, 'the notebook page', host);
    await expectNoSecretsIn(tree, 'the tree page, later', host);
  } catch (error) {
    for (const page of context.pages()) note(`open page: ${page.url()}`);
    await screenshot(tree, 'failed-tree');
    await screenshot(notebook, 'failed-notebook');
    throw error;
  }
  return { tree, notebook };
}

// A script's one TAP test: @run, then @cleanUp(attempt) once however it
// ends, a signal from meson's timeout or ^C included, then "ok 1 -
// @passed" or "not ok 1 - @failed". @cleanUp does each step through
// attempt(what, body), which notes a failed step and goes on. @skip: why
// to skip it, or null. @beforeCleanUp(failure): what a failure should
// note while the logs are still there.
export async function runTest({ passed, failed, run, cleanUp, skip = null,
  beforeCleanUp = null }) {
  const started = Date.now();
  const elapsed = () => ((Date.now() - started) / 1000).toFixed(1);
  let cleaning = null;
  const cleanUpOnce = () => {
    cleaning ??= (async () => {
      const problems = [];
      await cleanUp(async (what, body) => {
        try {
          await body();
        } catch (error) {
          problems.push(`${what}: ${error.message}`);
        }
      });
      return problems;
    })();
    return cleaning;
  };
  let reported = false;
  const report = (failure) => {
    if (reported) return;
    reported = true;
    if (failure) {
      note(failure);
      process.stdout.write(`not ok 1 - ${failed} (${elapsed()} s)\n`);
      process.exitCode = 1;
    } else {
      process.stdout.write(`ok 1 - ${passed} (${elapsed()} s)\n`);
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.once(signal, async () => {
      note(`${signal} during "${state.step}": cleaning up`);
      await cleanUpOnce();
      report(`stopped by ${signal} during "${state.step}"`);
      process.exit(1);
    });
  }
  process.stdout.write('1..1\n');
  if (skip) {
    process.stdout.write(`ok 1 # SKIP ${skip}\n`);
    return;
  }
  let failure = null;
  try {
    await run();
  } catch (error) {
    failure = error instanceof Failure ? error.message : `${state.step}: ${error.stack ?? error}`;
  }
  if (failure && beforeCleanUp) beforeCleanUp(failure);
  const problems = await cleanUpOnce();
  if (!failure && problems.length) failure = `cleaning up: ${problems.join('; ')}`;
  else for (const problem of problems) note(`cleaning up: ${problem}`);
  report(failure);
}

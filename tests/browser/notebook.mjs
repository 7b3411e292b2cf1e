// The access proxy in a real browser: Debian's Chromium, driven by
// playwright-core, opens the access link of a running native notebook
// (the real daemon, real Jupyter in bubblewrap), lands on the notebook UI
// at w-<id>.localhost, creates a notebook, runs print(6*7) and sees 42.
// Then: the session cookie is HttpOnly, the page never holds the
// workload's token, and the daemon's log holds no ticket, cookie or token.
//
// EINSORA_DAEMON: the daemon binary. Screenshots go to
// $EINSORA_TEST_ARTIFACTS, else $EINSORA_TEST_LOG_DIR (meson's log dir).
// EINSORA_BROWSER_STEP_MS shortens each step's budget while developing.
// Output is TAP, one test; run.sh installs playwright-core first.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  STEP_MS, check, fail, launchBrowser, makeTempDir, note, openAndRunCell,
  runTest, state as harnessState, statePid, step, waitFor, workloadToken,
} from './harness.mjs';

const NOTEBOOK = {
  kind: 'notebook',
  gpu_class: 'cpu-1c-2g',
  image: 'jupyter-linux',
  name: 'browser',
};
// The native driver's longest socket path is <run dir>/<uuid>/notebook.sock,
// and a socket address holds 107 bytes.
const RUN_DIR_MAX = 107 - '/00000000-0000-0000-0000-000000000000/notebook.sock'.length;

const state = Object.assign(harnessState, {
  runDir: null,
  logPath: null,
  daemon: null, // ChildProcess
  daemonExit: null, // Promise of {code, signal}
  api: null, // http://127.0.0.1:PORT
  ownerToken: null,
  workloadId: null,
});

function readLog() {
  try {
    return fs.readFileSync(state.logPath, 'utf8');
  } catch {
    return '';
  }
}

function logTail(lines = 40) {
  return readLog().trimEnd().split('\n').slice(-lines).join('\n');
}

/* The daemon */

async function startDaemon() {
  const daemonPath = process.env.EINSORA_DAEMON;
  check(daemonPath, 'EINSORA_DAEMON is not set (the einsora-daemon binary)');
  check(fs.existsSync(daemonPath), `EINSORA_DAEMON: ${daemonPath} does not exist`);

  const dir = makeTempDir('einsora-browser-');
  const dataDir = path.join(dir, 'data');
  state.runDir = path.join(dir, 'run');
  if (state.runDir.length > RUN_DIR_MAX) {
    // A long TMPDIR: the sockets need a shorter place.
    state.runDir = path.join(makeTempDir('eb-', '/tmp'), 'run');
  }
  state.logPath = path.join(dir, 'daemon.log');

  const env = { ...process.env };
  delete env.EINSORA_DATA_DIR;
  delete env.EINSORA_DRIVERS; // the drivers that work here: linux-native
  Object.assign(env, {
    EINSORA_AGENT_RUN_DIR: state.runDir,
    EINSORA_ACCESS_ADDR: '127.0.0.1:0',
    EINSORA_CONTROLLER_INTERVAL: '200ms',
    G_MESSAGES_DEBUG: 'all', // everything, so the secret check sees it all
  });
  const log = fs.openSync(state.logPath, 'a', 0o600);
  const args = ['--data-dir', dataDir, '--listen', '127.0.0.1:0'];
  // If this test is killed, the daemon goes with it.
  const setpriv = '/usr/bin/setpriv';
  const [command, argv] = fs.existsSync(setpriv)
    ? [setpriv, ['--pdeathsig', 'TERM', '--', daemonPath, ...args]]
    : [daemonPath, args];
  state.daemon = spawn(command, argv, { env, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  state.daemonExit = new Promise((resolve) => {
    state.daemon.on('exit', (code, signal) => resolve({ code, signal }));
  });
  let exited = null;
  state.daemonExit.then((how) => { exited = how; });

  const found = await waitFor('the daemon listening', () => {
    if (exited)
      fail(`einsora-daemon exited (${exited.code ?? exited.signal}) before it was ready:\n` +
        logTail());
    const text = readLog();
    const api = /api listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(text);
    const access = /access proxy listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(text);
    return api && access ? { api: api[1], accessPort: Number(access[1]) } : null;
  }, 50);
  state.api = found.api;
  state.ownerToken = fs.readFileSync(path.join(dataDir, 'token'), 'utf8').trim();
  state.secrets.set('owner token', state.ownerToken);
  note(`daemon: api ${found.api}, access proxy port ${found.accessPort}, run dir ${state.runDir}`);
  return found;
}

async function call(method, urlPath, body) {
  const response = await fetch(state.api + urlPath, {
    method,
    headers: {
      Authorization: `Bearer ${state.ownerToken}`,
      ...(body ? { 'Content-Type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON; the status says what happened
  }
  return { status: response.status, text, json };
}

async function waitForState(id, wanted) {
  let last = null;
  return waitFor(() => `workload ${id} is ${last}, not ${wanted}, after ${STEP_MS / 1000} s; ` +
    `daemon log:\n${logTail()}`, async () => {
    const response = await call('GET', `/v1/workloads/${id}?include_deleted=true`);
    check(response.status === 200, `GET /v1/workloads/${id}: ${response.status} ${response.text}`);
    if (response.json.state !== last) {
      last = response.json.state;
      note(`workload ${id}: ${last}`);
    }
    if (wanted !== 'deleted' && ['failed', 'deleted'].includes(last))
      fail(`workload ${id} is ${last}, waiting for ${wanted}: ${response.text}\n` +
        `daemon log:\n${logTail()}`);
    return last === wanted ? response.json : null;
  }, 200);
}


/* The test */

async function run() {
  const { accessPort } = await step('start the daemon', startDaemon);
  const browserDir = makeTempDir('einsora-chromium-');

  const id = await step('launch a notebook', async () => {
    const response = await call('POST', '/v1/workloads', NOTEBOOK);
    check(response.status === 201, `POST /v1/workloads: ${response.status} ${response.text}`);
    state.workloadId = response.json.id;
    await waitForState(state.workloadId, 'running');
    return state.workloadId;
  });
  const host = `w-${id}.localhost`;
  state.secrets.set('workload token', workloadToken(state.runDir, id));

  const link = await step('ask for an access link', async () => {
    const response = await call('POST', `/v1/workloads/${id}/access`);
    check(response.status === 201, `POST /v1/workloads/${id}/access: ${response.status} ` +
      response.text);
    check(!response.text.includes(state.secrets.get('workload token')),
      'the access answer holds the workload token');
    const url = new URL(response.json.url);
    check(url.host === `${host}:${accessPort}`, `the access link's host is ${url.host}, not ` +
      `${host}:${accessPort}`);
    check(url.pathname === '/_einsora/open', `the access link's path is ${url.pathname}`);
    const ticket = url.searchParams.get('ticket');
    check(ticket && ticket.length >= 16, 'the access link has no ticket');
    state.secrets.set('ticket', ticket);
    return url.href;
  });

  const context = await step('start chromium', () => launchBrowser(browserDir));
  await openAndRunCell(context, link, host);

  await step('close chromium', async () => {
    await state.context.close();
    state.context = null;
  });
  await step('delete the notebook', async () => {
    const response = await call('DELETE', `/v1/workloads/${id}`);
    check(response.status === 202, `DELETE /v1/workloads/${id}: ${response.status} ` +
      response.text);
    await waitForState(id, 'deleted');
    state.workloadId = null;
  });
  await step('stop the daemon', stopDaemon);

  const log = readLog();
  for (const [name, value] of state.secrets)
    check(!log.includes(value), `the daemon's log holds the ${name}`);
}

async function stopDaemon() {
  if (!state.daemon) return;
  const daemon = state.daemon;
  state.daemon = null;
  if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGTERM');
  const exited = await Promise.race([state.daemonExit, sleep(30_000, null, { ref: false })]);
  if (!exited) {
    daemon.kill('SIGKILL');
    await state.daemonExit;
    fail('einsora-daemon did not stop within 30 s of SIGTERM');
  }
  check(exited.code === 0, `einsora-daemon stopped with ${exited.code ?? exited.signal}:\n` +
    logTail());
}

// Whatever is left: the browser, the workload, the daemon, every process
// group a state file names, the temp directories, each step through
// attempt (runTest calls it once).
async function cleanUp(attempt) {
  if (state.context)
    await attempt('closing chromium', () => state.context.close());
  if (state.workloadId && state.daemon) {
    await attempt('deleting the workload', async () => {
      const response = await call('DELETE', `/v1/workloads/${state.workloadId}`);
      if (response.status === 202)
        await Promise.race([waitForState(state.workloadId, 'deleted'),
          sleep(30_000, null, { ref: false })]);
    });
  }
  await attempt('stopping the daemon', stopDaemon);
  if (state.runDir) {
    let names = [];
    try {
      names = fs.readdirSync(state.runDir);
    } catch {
      // never made
    }
    for (const name of names.filter((item) => item.endsWith('.state'))) {
      await attempt(`the process group of ${name}`, () => {
        const pid = statePid(path.join(state.runDir, name));
        if (pid > 1) {
          try {
            process.kill(-pid, 'SIGKILL');
          } catch (error) {
            if (error.code !== 'ESRCH') throw error;
          }
        }
      });
    }
  }
  for (const dir of state.dirs.reverse()) {
    await attempt(`removing ${dir}`, async () => {
      // A test that tightened modes must not stop the cleanup.
      fs.chmodSync(dir, 0o700);
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    });
  }
}

await runTest({
  passed: 'a notebook through the access proxy in Chromium prints 42',
  failed: 'a notebook through the access proxy in Chromium',
  run,
  cleanUp,
});

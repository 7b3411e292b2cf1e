// A Lab server reached from another machine (issue 19's "Done means"):
// the real daemon runs in a network namespace this test makes, on its end
// of a veth pair, over real TLS; "the laptop" is this namespace, at the
// pair's other address, so every request really crosses from another
// address. From the laptop, with the real `einsora` CLI: an unpinned
// certificate is refused and pinned by fingerprint; the admin (the first
// run's owner) makes a team of two accounts and gives it a GPU quota, and
// shares the machine; a guest of the team launches a notebook, which runs
// in bubblewrap on the shared machine, and opens it through `einsora
// open`'s relay in Debian's Chromium, where a cell prints 42; the owner's
// workload is 404 to the guest, the team's workloads are shared; a GPU
// request with a fallback runs on the CPU class when no GPU is there; a
// disabled account is refused on its next request; a changed certificate
// is refused naming both fingerprints. Nothing secret reaches the
// daemon's log. Aging is decided by the controller's table tests
// (tests/einsora-controller-test.c), with an injected clock.
//
// Needs root (ip netns); skipped without it. EINSORA_DAEMON, EINSORA_CLI:
// the binaries. Output is TAP, one test.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  check, fail, launchBrowser, makeTempDir, note, openAndRunCell,
  runTest, state as harnessState, statePid, step, waitFor,
} from './harness.mjs';

const CPU_CLASS = 'cpu-1c-2g';
const GPU_CLASS = 'l40s-48gb';
const IMAGE = 'jupyter-linux';
// Short names: an interface's is at most 15 bytes.
const tag = String(process.pid % 100000);
const NETNS = `einsora-lab-${tag}`;
const LAB_IF = `elab${tag}`;
const LAPTOP_IF = `elap${tag}`;
// A /30 of its own, from the pid, in 10.244.0.0/16: nothing else routes
// there, and nothing leaves the two namespaces.
const SUBNET = `10.244.${process.pid % 250}`;
const LAB_ADDRESS = `${SUBNET}.1`;
const LAPTOP_ADDRESS = `${SUBNET}.2`;

const state = Object.assign(harnessState, {
  screenshotPrefix: 'einsora-lab-test',
  netns: false, // made
  veth: false,
  runDir: null,
  dataDir: null,
  logPath: null,
  configHome: null, // the laptop's XDG_CONFIG_HOME
  daemon: null,
  daemonExit: null,
  api: null, // https://LAB_ADDRESS:PORT
  apiPort: null,
  accessPort: null,
  fingerprint: null,
  relay: null, // the `einsora open` ChildProcess
  workloads: [], // [id, token] to delete at the end
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

function ip(...args) {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/* The two machines */

function makeNetwork() {
  ip('netns', 'add', NETNS);
  state.netns = true;
  ip('link', 'add', LAPTOP_IF, 'type', 'veth', 'peer', 'name', LAB_IF);
  state.veth = true;
  ip('link', 'set', LAB_IF, 'netns', NETNS);
  ip('addr', 'add', `${LAPTOP_ADDRESS}/30`, 'dev', LAPTOP_IF);
  ip('link', 'set', LAPTOP_IF, 'up');
  ip('netns', 'exec', NETNS, 'ip', 'addr', 'add', `${LAB_ADDRESS}/30`, 'dev', LAB_IF);
  ip('netns', 'exec', NETNS, 'ip', 'link', 'set', LAB_IF, 'up');
  ip('netns', 'exec', NETNS, 'ip', 'link', 'set', 'lo', 'up');
  note(`the Lab: ${LAB_ADDRESS} in ${NETNS}; the laptop: ${LAPTOP_ADDRESS}`);
}

/* The daemon, in the Lab's namespace */

async function startDaemon(ports) {
  const daemonPath = process.env.EINSORA_DAEMON;
  check(daemonPath && fs.existsSync(daemonPath), 'EINSORA_DAEMON is not the einsora-daemon binary');
  const env = { ...process.env };
  delete env.EINSORA_DATA_DIR;
  delete env.EINSORA_DRIVERS; // linux-native: Jupyter in bubblewrap
  Object.assign(env, {
    EINSORA_AGENT_RUN_DIR: state.runDir,
    EINSORA_CONTROLLER_INTERVAL: '200ms',
    G_MESSAGES_DEBUG: 'all', // everything, so the secret check sees it all
  });
  if (process.env.EINSORA_LLAMA_DIR)
    env.EINSORA_LLAMA_SERVER = path.join(process.env.EINSORA_LLAMA_DIR, 'bin', 'llama-server');
  const start = fs.statSync(state.logPath, { throwIfNoEntry: false })?.size ?? 0;
  const log = fs.openSync(state.logPath, 'a', 0o600);
  // ip netns exec runs the daemon in place (no fork), so setpriv's
  // parent-death signal is this test's.
  state.daemon = spawn('ip', ['netns', 'exec', NETNS, '/usr/bin/setpriv', '--pdeathsig', 'TERM',
    '--', daemonPath, '--data-dir', state.dataDir,
    '--listen', `${LAB_ADDRESS}:${ports?.api ?? 0}`,
    '--access-listen', `${LAB_ADDRESS}:${ports?.access ?? 0}`],
  { env, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  let exited = null;
  state.daemonExit = new Promise((resolve) => {
    state.daemon.on('exit', (code, signal) => resolve({ code, signal }));
  });
  state.daemonExit.then((how) => { exited = how; });
  const found = await waitFor('the daemon listening', () => {
    if (exited)
      fail(`einsora-daemon exited (${exited.code ?? exited.signal}) before it was ready:\n` +
        logTail());
    const text = readLog().slice(start);
    const api = /api listening on (https:\/\/[0-9.]+:(\d+))\//.exec(text);
    const access = /access proxy listening on https:\/\/[0-9.]+:(\d+)\//.exec(text);
    const fingerprint = /, fingerprint (SHA256:[0-9a-f]{64})/.exec(text);
    return api && access && fingerprint && /ready: region/.test(text)
      ? { api: api[1], apiPort: Number(api[2]), accessPort: Number(access[1]),
        fingerprint: fingerprint[1] }
      : null;
  }, 50);
  Object.assign(state, found);
  note(`daemon: api ${found.api}, access proxy port ${found.accessPort}, ` +
    `certificate ${found.fingerprint}`);
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

/* The laptop's CLI */

function cliEnv(token) {
  const env = { ...process.env, EINSORA_SERVER: state.api, XDG_CONFIG_HOME: state.configHome,
    LC_ALL: 'C.UTF-8' };
  delete env.EINSORA_DATA_DIR;
  delete env.EINSORA_TOKEN;
  if (token) env.EINSORA_TOKEN = token;
  return env;
}

// `einsora ARGS` as @token; {code, out, err}.
async function cli(token, ...args) {
  const cliPath = process.env.EINSORA_CLI;
  check(cliPath && fs.existsSync(cliPath), 'EINSORA_CLI is not the einsora binary');
  const child = spawn(cliPath, args, { env: cliEnv(token), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; });
  child.stdin.end();
  const code = await new Promise((resolve) => child.on('close', resolve));
  return { code, out, err };
}

async function cliJson(token, ...args) {
  const run = await cli(token, '--json', ...args);
  check(run.code === 0, `einsora ${args.join(' ')}: ${run.code}: ${run.err}`);
  return JSON.parse(run.out);
}

async function waitForState(token, id, wanted) {
  let last = null;
  return waitFor(() => `workload ${id} is ${last}, not ${wanted}; daemon log:\n${logTail()}`,
    async () => {
      const run = await cli(token, '--json', 'export', id);
      check(run.code === 0, `einsora export ${id}: ${run.code} ${run.err}`);
      const workload = JSON.parse(run.out).workload;
      if (workload.state !== last) {
        last = workload.state;
        note(`workload ${id}: ${last}`);
      }
      if (['failed', 'deleted'].includes(last) && last !== wanted)
        fail(`workload ${id} is ${last}, waiting for ${wanted}: ${run.out}`);
      return last === wanted ? workload : null;
    }, 200);
}

async function launch(token, ...args) {
  const workload = await cliJson(token, 'launch', '--kind', 'notebook', '--image', IMAGE, ...args);
  state.workloads.push([workload.id, token]);
  return workload;
}

// The link `einsora open ID` prints: its relay runs until SIGINT.
async function startRelay(token, id) {
  const child = spawn(process.env.EINSORA_CLI, ['open', id],
    { env: cliEnv(token), stdio: ['ignore', 'pipe', 'pipe'] });
  state.relay = child;
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; note(`einsora open: ${chunk}`); });
  const line = await waitFor(() => `einsora open printed no link: ${err}`, () => {
    check(child.exitCode === null, `einsora open exited ${child.exitCode}: ${err}`);
    const end = out.indexOf('\n');
    return end >= 0 ? out.slice(0, end) : null;
  }, 50);
  return line;
}

async function stopRelay() {
  const child = state.relay;
  if (!child) return;
  state.relay = null;
  if (child.exitCode !== null) return;
  const closed = new Promise((resolve) => child.on('close', (code, signal) =>
    resolve({ code, signal })));
  child.kill('SIGINT');
  const how = await closed;
  check(how.code === 0, `einsora open ended with ${how.code ?? how.signal} on SIGINT`);
}

/* The test */

async function run() {
  const dir = makeTempDir('einsora-lab-');
  state.dataDir = path.join(dir, 'data');
  state.logPath = path.join(dir, 'daemon.log');
  state.configHome = path.join(dir, 'laptop-config');
  // Sockets need a short path: <run dir>/<uuid>/notebook.sock.
  state.runDir = path.join(makeTempDir('el-', '/tmp'), 'run');

  await step('make the two machines', async () => makeNetwork());
  await step('start the daemon on the Lab address', () => startDaemon());
  const owner = fs.readFileSync(path.join(state.dataDir, 'token'), 'utf8').trim();
  state.secrets.set('owner token', owner);

  await step('an unpinned certificate is refused, then pinned', async () => {
    const refused = await cli(owner, 'me');
    check(refused.code === 1 && refused.err.includes('untrusted_certificate') &&
      refused.err.includes(state.fingerprint),
    `einsora me before login: ${refused.code}: ${refused.err}`);
    const login = await cli(owner, 'login', state.api, '--fingerprint', state.fingerprint);
    check(login.code === 0, `einsora login --fingerprint: ${login.code}: ${login.err}`);
    const me = await cliJson(owner, 'me');
    check(me.subject === 'owner@localhost', `einsora me: ${JSON.stringify(me)}`);
  });

  const team = await step('the admin makes a team of two and gives it a GPU quota', async () => {
    const alice = await cliJson(owner, 'admin', 'accounts', 'create', 'alice@lab.example',
      '--new-tenant', 'vision');
    const bob = await cliJson(owner, 'admin', 'accounts', 'create', 'bob@lab.example',
      '--tenant', 'vision');
    check(alice.secret && bob.secret, 'an account was created with no first token');
    state.secrets.set('alice token', alice.secret);
    state.secrets.set('bob token', bob.secret);
    check(alice.account.tenant_id === bob.account.tenant_id,
      `bob joined ${bob.account.tenant_id}, not alice's tenant ${alice.account.tenant_id}`);
    const quota = await cli(owner, 'admin', 'quota', 'set', 'vision', GPU_CLASS, '1');
    check(quota.code === 0, `einsora admin quota set: ${quota.code}: ${quota.err}`);
    return { alice: alice.secret, bob: bob.secret };
  });

  const machine = await step('the owner shares the machine with the Lab', async () => {
    const listed = await cliJson(owner, 'machines');
    check(listed.machines.length === 1, `einsora machines: ${JSON.stringify(listed)}`);
    const id = listed.machines[0].id;
    const shared = await cli(owner, 'share', id, 'community');
    check(shared.code === 0, `einsora share: ${shared.code}: ${shared.err}`);
    return id;
  });

  const ownWorkload = await step("the owner's own workload", async () =>
    // A GPU notebook: it waits (no GPU here), and is the owner's alone.
    (await launch(owner, '--class', GPU_CLASS)).id);

  const id = await step('a guest launches a notebook on the shared machine', async () => {
    const workload = await launch(team.alice, '--class', CPU_CLASS);
    const running = await waitForState(team.alice, workload.id, 'running');
    check(running.machine_id === machine, `it runs on ${running.machine_id}, not ${machine}`);
    return workload.id;
  });

  await step('it runs in bubblewrap', async () => {
    const pid = statePid(path.join(state.runDir, `${id}.state`));
    check(pid > 1, `${id}.state names no process`);
    const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    check(command.endsWith('bwrap'), `the notebook's process is ${command}, not bwrap`);
  });

  await step("the owner's workload is 404 to the guest; the team's is the team's", async () => {
    const hidden = await cli(team.alice, 'events', ownWorkload);
    check(hidden.code === 1 && hidden.err.includes('not_found'),
      `the guest asked for the owner's workload: ${hidden.code}: ${hidden.err}`);
    const listed = await cliJson(team.alice, 'workloads');
    check(!listed.workloads.some((workload) => workload.id === ownWorkload),
      "the guest's list holds the owner's workload");
    const teammate = await cliJson(team.bob, 'workloads');
    check(teammate.workloads.some((workload) => workload.id === id),
      "bob's list lacks alice's notebook: one tenant, one set of workloads");
  });

  const host = `w-${id}.localhost`;
  const link = await step("open it through einsora open's relay", async () => {
    const line = await startRelay(team.alice, id);
    const url = new URL(line);
    check(url.hostname === host, `the relay's link is at ${url.hostname}, not ${host}`);
    check(url.protocol === 'http:' && Number(url.port) !== state.accessPort,
      `the relay's link is ${url.protocol}//…:${url.port}: not this machine's own relay`);
    const ticket = url.searchParams.get('ticket');
    check(ticket, 'the link has no ticket');
    state.secrets.set('ticket', ticket);
    return line;
  });

  const context = await step('start chromium', () =>
    launchBrowser(makeTempDir('einsora-lab-chromium-')));
  await openAndRunCell(context, link, host);
  await step('close chromium and the relay', async () => {
    await state.context.close();
    state.context = null;
    await stopRelay();
  });

  await step('a GPU request with a fallback runs on the CPU class', async () => {
    const workload = await launch(team.alice, '--class', GPU_CLASS, '--fallback', CPU_CLASS,
      '--fallback-after', '1s');
    const placed = await waitFor(`workload ${workload.id} placed on its fallback`, async () => {
      const exported = await cliJson(team.alice, 'export', workload.id);
      return exported.workload.fallback_used ? exported.workload : null;
    }, 200);
    check(placed.placed_class === CPU_CLASS, `placed on ${placed.placed_class}`);
  });

  await step('a disabled account is refused on its next request', async () => {
    const before = await cli(team.bob, 'me');
    check(before.code === 0, `bob before: ${before.code}: ${before.err}`);
    const disabled = await cli(owner, 'admin', 'accounts', 'disable', 'bob@lab.example');
    check(disabled.code === 0, `einsora admin accounts disable: ${disabled.code}: ${disabled.err}`);
    const after = await cli(team.bob, 'me');
    check(after.code === 1 && after.err.includes('unauthenticated'),
      `bob after being disabled: ${after.code}: ${after.err}`);
  });

  await step('delete the workloads', deleteWorkloads);

  if (process.env.EINSORA_LLAMA_DIR)
    await endpointFromTheLaptop(owner, team.alice, dir);
  else
    note('no endpoint: EINSORA_LLAMA_DIR is not set (packaging/dev/test.sh sets it)');

  await step('a changed certificate is refused, both fingerprints named', async () => {
    const old = state.fingerprint;
    const ports = { api: state.apiPort, access: state.accessPort };
    await stopDaemon();
    fs.rmSync(path.join(state.dataDir, 'tls'), { recursive: true, force: true });
    await startDaemon(ports);
    check(state.fingerprint !== old, 'the daemon kept its certificate');
    const refused = await cli(owner, 'me');
    check(refused.code === 1 && refused.err.includes(old) &&
      refused.err.includes(state.fingerprint),
    `einsora me with a changed certificate: ${refused.code}: ${refused.err}`);
  });
  await step('stop the daemon', stopDaemon);

  const log = readLog();
  for (const [name, value] of state.secrets)
    check(!log.includes(value), `the daemon's log holds the ${name}`);
}

// An endpoint of the guest's, called from the laptop both ways: straight
// over TLS by `einsora chat` (the pinned certificate), and by a plain
// OpenAI-style client through `einsora open`'s relay on the laptop's
// loopback, with the API token and refused without.
async function endpointFromTheLaptop(owner, guest, dir) {
  const model = path.join(dir, 'tiny.gguf');
  await step('the admin adds a model', async () => {
    execFileSync('/usr/bin/python3', [
      path.join(process.env.EINSORA_SOURCE_ROOT, 'tests', 'models', 'make-tiny-model.py'),
      path.join(process.env.EINSORA_LLAMA_DIR, 'share'), model]);
    const added = await cli(owner, 'models', 'add', 'tiny', model);
    check(added.code === 0, `einsora models add: ${added.code}: ${added.err}`);
  });
  const id = await step('a guest launches an endpoint', async () => {
    const workload = await cliJson(guest, 'launch', '--kind', 'endpoint', '--model', 'tiny',
      '--class', 'cpu-2c-4g');
    state.workloads.push([workload.id, guest]);
    await waitForState(guest, workload.id, 'running');
    return workload.id;
  });
  await step('einsora chat calls it over TLS, straight', async () => {
    const chat = await cli(guest, 'chat', id, 'Hi');
    check(chat.code === 0 && chat.out.trim().length > 0,
      `einsora chat from the laptop: ${chat.code}: ${chat.out} ${chat.err}`);
  });
  await step("an OpenAI client calls it through einsora open's relay", async () => {
    const base = await startRelay(guest, id);
    const url = new URL(base);
    check(url.hostname === '127.0.0.1' && url.pathname === `/endpoints/${id}/v1`,
      `the relay's base URL is ${base}`);
    const models = await fetch(`${base}/models`, {
      headers: { Authorization: `Bearer ${guest}` }, signal: AbortSignal.timeout(30_000),
    });
    const listed = await models.json();
    check(models.status === 200 && listed.data?.length === 1,
      `GET /models through the relay: ${models.status} ${JSON.stringify(listed)}`);
    const completion = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${guest}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }),
      signal: AbortSignal.timeout(60_000),
    });
    const answer = await completion.json();
    check(completion.status === 200 && answer.choices?.length === 1,
      `POST /chat/completions through the relay: ${completion.status} ` +
      JSON.stringify(answer));
    const refused = await fetch(`${base}/models`, { signal: AbortSignal.timeout(30_000) });
    check(refused.status === 401, `GET /models with no token: ${refused.status}`);
    await stopRelay();
  });
  await step('delete the endpoint', deleteWorkloads);
}

async function deleteWorkloads() {
  for (const [id, token] of state.workloads.splice(0)) {
    const run = await cli(token, 'delete', id);
    check(run.code === 0, `einsora delete ${id}: ${run.code}: ${run.err}`);
    await waitForState(token, id, 'deleted');
  }
}

// Whatever is left: the relay, the browser, the workloads, the daemon,
// every process in the Lab's namespace, the namespace and its link, the
// temp directories, each step through attempt (runTest calls it once).
async function cleanUp(attempt) {
  if (state.relay) await attempt('stopping the relay', stopRelay);
  if (state.context) await attempt('closing chromium', () => state.context.close());
  if (state.workloads.length && state.daemon)
    await attempt('deleting the workloads', () => Promise.race([deleteWorkloads(),
      sleep(60_000, null, { ref: false })]));
  await attempt('stopping the daemon', stopDaemon);
  if (state.netns) {
    await attempt('the processes left in the Lab', () => {
      const pids = execFileSync('ip', ['netns', 'pids', NETNS], { encoding: 'utf8' })
        .split('\n').filter(Boolean).map(Number);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          if (error.code !== 'ESRCH') throw error;
        }
      }
    });
    await attempt('deleting the Lab namespace', () => ip('netns', 'del', NETNS));
  }
  if (state.veth)
    await attempt('the laptop link', () => {
      try {
        ip('link', 'del', LAPTOP_IF);
      } catch {
        // went with the namespace
      }
    });
  for (const dir of state.dirs.reverse())
    await attempt(`removing ${dir}`, () =>
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 }));
}

await runTest({
  passed: 'a Lab notebook from another machine, through the relay, prints 42',
  failed: 'a Lab notebook from another machine',
  run,
  cleanUp,
  skip: process.getuid?.() !== 0 ? 'network namespaces need root' : null,
});

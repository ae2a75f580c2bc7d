/**
 * The agent's gRPC services as kubelet meets them: a client of @grpc/grpc-js built from the
 * same fetched protos, over the unix socket the agent serves.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@grpc/grpc-js';
import { identityService } from '../../../src/runtime/csi/identity-service';
import { loadProtos } from '../../../src/runtime/csi/protos';
import { registrationService } from '../../../src/runtime/csi/registration-service';
import { SocketServer } from '../../../src/runtime/csi/socket-server';
import { call, csiClients } from '../../support/csi-client';
import { makeTempDir } from '../../support/privileged';

const DRIVER = 'pool.local-volume-provisioner.io';

describe('the agent\'s gRPC services on a unix socket', () => {
  let server: SocketServer | undefined;
  let stubs: Client[] = [];
  afterEach(async () => {
    stubs.forEach((s) => s.close());
    stubs = [];
    await server?.stop();
    server = undefined;
  });

  async function serve(options: { ready?: () => boolean; onStatus?: (registered: boolean, error: string) => void; socketPath?: string } = {}) {
    const protos = loadProtos();
    const socketPath = options.socketPath ?? path.join(makeTempDir('lvp-csi-'), 'csi.sock');
    server = new SocketServer(socketPath, [
      { definition: protos.identity, implementation: identityService({ driverName: DRIVER, version: '9.9.9', ready: options.ready ?? (() => true) }) },
      { definition: protos.registration, implementation: registrationService({ driverName: DRIVER, endpoint: '/var/lib/kubelet/plugins/x/csi.sock', onStatus: options.onStatus ?? (() => undefined) }) },
    ]);
    await server.start();
    const c = csiClients(socketPath);
    stubs.push(...Object.values(c));
    return { ...c, socketPath };
  }

  test('GetPluginInfo names the driver and the agent\'s version', async () => {
    const { identity } = await serve();
    expect(await call(identity, 'GetPluginInfo')).toEqual({ name: DRIVER, vendor_version: '9.9.9', manifest: {} });
  });

  test('GetPluginCapabilities offers volumes reachable from their node only, and no Controller service', async () => {
    const { identity } = await serve();
    expect(await call(identity, 'GetPluginCapabilities')).toEqual({
      capabilities: [{ service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' }, type: 'service' }],
    });
  });

  test('Probe says the agent\'s readiness as it is at each call', async () => {
    let ready = false;
    const { identity } = await serve({ ready: () => ready });
    expect(await call(identity, 'Probe')).toEqual({ ready: { value: false } });
    ready = true;
    expect(await call(identity, 'Probe')).toEqual({ ready: { value: true } });
  });

  test('kubelet\'s GetInfo is told a CSI plugin, its endpoint and the CSI versions it speaks', async () => {
    const { registration } = await serve();
    expect(await call(registration, 'GetInfo')).toEqual({
      type: 'CSIPlugin', name: DRIVER, endpoint: '/var/lib/kubelet/plugins/x/csi.sock', supported_versions: ['1.0.0'],
    });
  });

  test('what kubelet says of the registration reaches the agent, a refusal with its error', async () => {
    const said: Array<[boolean, string]> = [];
    const { registration } = await serve({ onStatus: (registered, error) => said.push([registered, error]) });
    await call(registration, 'NotifyRegistrationStatus', { plugin_registered: false, error: 'no such version' });
    await call(registration, 'NotifyRegistrationStatus', { plugin_registered: true });
    expect(said).toEqual([[false, 'no such version'], [true, '']]);
  });

  test('a socket an earlier process left is replaced', async () => {
    const socketPath = path.join(makeTempDir('lvp-csi-'), 'csi.sock');
    // A process that bound it and ended without removing it (as a killed agent leaves it).
    execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', socketPath]);
    expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
    const { identity } = await serve({ socketPath });
    expect((await call(identity, 'GetPluginInfo')).name).toBe(DRIVER);
  });

  test('anything but a socket at its path is kept, and the start refused, saying so', async () => {
    const socketPath = path.join(makeTempDir('lvp-csi-'), 'csi.sock');
    fs.writeFileSync(socketPath, 'not ours');
    await expect(serve({ socketPath })).rejects.toThrow(`cannot serve gRPC on ${socketPath}: something other than a socket is there`);
    expect(fs.readFileSync(socketPath, 'utf8')).toBe('not ours');
  });

  test('a socket as long as unix sockets allow is served; a longer path is refused, saying what to do', async () => {
    const dir = makeTempDir('lvp-csi-');
    const longest = path.join(dir, 'x'.repeat(107 - dir.length - 1));
    const { identity } = await serve({ socketPath: longest });
    expect((await call(identity, 'GetPluginInfo')).name).toBe(DRIVER);
    await server!.stop();
    await expect(serve({ socketPath: `${longest}y` })).rejects.toThrow(/is 108 bytes, and a unix socket's path holds at most 107; give kubelet's directory by a shorter path/);
  });

  test('stopped, it removes its socket, so kubelet sees the plugin go', async () => {
    const { socketPath } = await serve();
    await server!.stop();
    expect(fs.existsSync(socketPath)).toBe(false);
  });

  test('an agent started before the last one stopped (a rolling update with surge) keeps serving: the last one removes only its own socket', async () => {
    const socketPath = path.join(makeTempDir('lvp-csi-'), 'csi.sock');
    await serve({ socketPath });
    const earlier = server!;
    const { identity } = await serve({ socketPath });
    await earlier.stop();
    expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
    expect((await call(identity, 'GetPluginInfo')).name).toBe(DRIVER);
    expect(fs.readdirSync(path.dirname(socketPath))).toEqual(['csi.sock']);
  });

  test('without the fetched protos the agent says what is missing and what fetches them', () => {
    const nowhere = makeTempDir('lvp-no-protos-');
    expect(() => loadProtos(nowhere)).toThrow(`the CSI protos are missing (${nowhere}/csi/csi.proto, ${nowhere}/pluginregistration/api.proto): scripts/protos.sh fetches them`);
  });
});

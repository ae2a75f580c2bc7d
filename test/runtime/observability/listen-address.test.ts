import { parseListenAddress } from '../../../src/runtime/observability/listen-address';

describe('parseListenAddress', () => {
  test.each([
    [':8080', { host: undefined, port: 8080 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['0.0.0.0:9090', { host: '0.0.0.0', port: 9090 }],
    ['[::]:8080', { host: '::', port: 8080 }],
    ['[::1]:65535', { host: '::1', port: 65535 }],
    ['localhost:8080', { host: 'localhost', port: 8080 }],
  ])('reads %s', (address, expected) => {
    expect(parseListenAddress(address)).toEqual(expected);
  });

  test.each([
    ['8080', 'missing port'],
    ['', 'missing port'],
    ['localhost:', 'port "" is not a number from 0 to 65535'],
    [':http', 'port "http" is not a number from 0 to 65535'],
    [':65536', 'port "65536" is not a number from 0 to 65535'],
    [':-1', 'port "-1" is not a number'],
    ['::1:8080', 'too many colons'],
    ['[::1]8080', 'missing port after "]"'],
    ['[::1:8080', 'missing "]"'],
    ['[]:8080', 'empty IPv6 address'],
  ])('rejects %j, saying %s', (address, why) => {
    expect(() => parseListenAddress(address)).toThrow(`invalid listen address "${address}": ${why}`);
  });
});

/**
 * Protobuf request bodies (`application/vnd.kubernetes.protobuf`), which
 * client-go's typed clients send, kubectl's imperative commands among them
 * from kubectl 1.32 on: the `k8s\0` magic, the runtime.Unknown envelope naming
 * apiVersion and kind, and the object inside it, read with the wire layout of
 * protobuf-schema.ts into the JSON form the Go types have.
 */
import { DECODED_KINDS, FieldSpec, MESSAGES } from './protobuf-schema';
import { ResourceType, groupVersion } from './resources';
import { ApiError, badRequest, unsupportedMediaType } from './status';

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';

const MAGIC = Buffer.from('k8s\0', 'latin1');

/** A cursor over one message's bytes. */
class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer, private readonly what: string) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** A base-128 varint: seven bits a byte, least significant first, the high bit set on all but the last. */
  varint(): bigint {
    let result = 0n;
    for (let scale = 1n, i = 0; i < 10; i++, scale *= 128n) {
      if (this.pos >= this.buf.length) throw this.truncated();
      const byte = this.buf[this.pos++];
      result += BigInt(byte % 128) * scale;
      if (byte < 128) return result;
    }
    throw badRequest(`unable to decode ${this.what}: varint overflow`);
  }

  /** A field key: the field number and the wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
  key(): { number: number; wireType: number } {
    const k = Number(this.varint());
    return { number: Math.floor(k / 8), wireType: k % 8 };
  }

  bytes(): Buffer {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) throw this.truncated();
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 2) this.bytes();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 5) this.pos += 4;
    else throw badRequest(`unable to decode ${this.what}: illegal wire type ${wireType}`);
  }

  private truncated() {
    return badRequest(`unable to decode ${this.what}: unexpected EOF`);
  }
}

const int64 = (v: bigint) => Number(BigInt.asIntN(64, v));

/** metav1.Time: whole seconds (and nanos) since the epoch; the zero time is absent, as Go encodes it as null. */
function time(msg: any): string | undefined {
  if (!msg.seconds && !msg.nanos) return undefined;
  return new Date(msg.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function isZero(v: unknown): boolean {
  return v === '' || v === 0 || v === false;
}

/** Reads one field's value of `type` at the reader's position. */
function value(r: Reader, type: string, wireType: number, message: string): unknown {
  switch (type) {
    case 'string': return r.bytes().toString('utf8');
    case 'bytes': return r.bytes().toString('base64');
    case 'int32':
    case 'int64': return int64(r.varint());
    case 'bool': return r.varint() !== 0n;
    case 'time': return time(decode(r.bytes(), 'Time'));
    case 'quantity': return decode(r.bytes(), 'Quantity').string ?? '0';
    case 'intOrString': {
      const v = decode(r.bytes(), 'IntOrString');
      return v.type === 1 ? v.strVal ?? '' : v.intVal ?? 0;
    }
    default:
      if (wireType !== 2) throw badRequest(`unable to decode ${message}: wrong wire type for a message`);
      return decode(r.bytes(), type);
  }
}

/** Decodes the bytes of one message into its JSON form. */
function decode(buf: Buffer, message: string): any {
  const fields = MESSAGES[message];
  if (!fields) throw unmodelled(`messages of type ${message}`);
  const out: any = {};
  const r = new Reader(buf, message);
  while (!r.done) {
    const { number, wireType } = r.key();
    const spec: FieldSpec | undefined = fields[number];
    if (!spec) throw unmodelled(`field ${number} of ${message}`);
    const list = /^\[\](.+)$/.exec(spec.type);
    const map = /^map<(.+)>$/.exec(spec.type);
    if (map) {
      const entry = new Reader(r.bytes(), `${message}.${spec.name}`);
      let k = '';
      let v: unknown = map[1] === 'quantity' ? '0' : '';
      while (!entry.done) {
        const ek = entry.key();
        if (ek.number === 1) k = entry.bytes().toString('utf8');
        else if (ek.number === 2) v = value(entry, map[1], ek.wireType, message);
        else entry.skip(ek.wireType);
      }
      (out[spec.name] ??= {})[k] = v;
    } else if (list) {
      (out[spec.name] ??= []).push(value(r, list[1], wireType, message));
    } else {
      const v = value(r, spec.type, wireType, message);
      if (v !== undefined && (spec.pointer || !isZero(v))) out[spec.name] = v;
    }
  }
  return out;
}

/** A field the layout does not describe: refused, since guessing could store something else than was sent. */
function unmodelled(what: string): ApiError {
  return new ApiError(415, 'UnsupportedMediaType', `the test API server does not decode protobuf ${what}; send application/json`);
}

/** What a server without a protobuf codec for the kind answers (as the real one does for custom resources). */
const noCodec = () => unsupportedMediaType(['application/json', 'application/yaml']);

/**
 * The object in a protobuf body sent to resource `r`, with the apiVersion and
 * kind its envelope names (the registry then checks they are the resource's).
 */
export function decodeProtobufObject(r: ResourceType, body: Buffer): any {
  if (!DECODED_KINDS.has(`${groupVersion(r)}/${r.kind}`)) throw noCodec();
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw badRequest(`provided data does not appear to be a protobuf message, expected prefix [${[...MAGIC].join(' ')}]`);
  }
  const envelope = new Reader(body.subarray(MAGIC.length), 'Unknown');
  let typeMeta: any = {};
  let raw: Buffer = Buffer.alloc(0);
  while (!envelope.done) {
    const key = envelope.key();
    switch (key.number) {
      case 1: typeMeta = decode(envelope.bytes(), 'TypeMeta'); break;
      case 2: raw = envelope.bytes(); break;
      case 3: {
        const encoding = envelope.bytes().toString('utf8');
        if (encoding) throw unmodelled(`bodies with content encoding ${encoding}`);
        break;
      }
      default: envelope.skip(key.wireType);
    }
  }
  const { apiVersion, kind } = typeMeta;
  if (!DECODED_KINDS.has(`${apiVersion}/${kind}`)) throw noCodec();
  return { apiVersion, kind, ...decode(raw, kind) };
}

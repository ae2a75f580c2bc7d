import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

/**
 * The construct's public API follows the cdk8s construct libraries' (and jsii's) rules:
 * named interfaces only (no inline object types, no Omit<> or other utility and mapped
 * types), every property `readonly` with a JSDoc line, and an optional one with its
 * `@default`. (jsii itself compiles the construct with no error: docs/construct.md,
 * "Other languages".)
 */
const source = (file: string) => {
  const path = join(__dirname, '..', '..', 'src', 'constructs', file);
  return ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true);
};
const SOURCES = ['props.ts', 'monitoring.ts', 'local-volume-provisioner.ts'].map(source);

const isExported = (n: ts.Node) => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
const hasModifier = (n: ts.Node, kind: ts.SyntaxKind) => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === kind);

interface Property {
  readonly at: string;
  readonly node: ts.PropertySignature;
}

const properties: Property[] = SOURCES.flatMap((s) => s.statements
  .filter(ts.isInterfaceDeclaration)
  .filter(isExported)
  .flatMap((i) => i.members.filter(ts.isPropertySignature).map((m) => ({ at: `${i.name.text}.${m.name.getText(s)}`, node: m }))));

interface PublicType {
  readonly at: string;
  readonly type: ts.Node;
}

/** Every type in the public API: interface properties and heritage, public class members and constructor parameters. */
const publicTypes: PublicType[] = SOURCES.flatMap((s) => s.statements.filter(isExported).flatMap((d): PublicType[] => {
  if (ts.isInterfaceDeclaration(d)) {
    return [
      ...d.members.filter(ts.isPropertySignature).filter((m) => m.type).map((m) => ({ at: `${d.name.text}.${m.name.getText(s)}`, type: m.type! })),
      ...(d.heritageClauses ?? []).flatMap((h) => h.types.map((t) => ({ at: `${d.name.text} extends`, type: t as ts.Node }))),
    ];
  }
  if (ts.isClassDeclaration(d)) {
    return d.members
      .filter((m) => !hasModifier(m, ts.SyntaxKind.PrivateKeyword) && !hasModifier(m, ts.SyntaxKind.ProtectedKeyword))
      .flatMap((m): PublicType[] => {
        if (ts.isPropertyDeclaration(m)) return m.type ? [{ at: `${d.name!.text}.${m.name.getText(s)}`, type: m.type }] : [{ at: `${d.name!.text}.${m.name.getText(s)} (untyped)`, type: m }];
        if (ts.isConstructorDeclaration(m)) return m.parameters.filter((p) => p.type).map((p) => ({ at: `${d.name!.text} constructor ${p.name.getText(s)}`, type: p.type! }));
        return [];
      });
  }
  return [];
}));

const jsDoc = (p: Property) => ts.getJSDocCommentsAndTags(p.node).filter(ts.isJSDoc);

test('the public API is read', () => {
  expect(properties.length).toBeGreaterThan(100);
  expect(publicTypes.some((t) => t.at === 'LocalVolumeProvisioner constructor props')).toBe(true);
});

test('every property is readonly', () => {
  expect(properties.filter((p) => !hasModifier(p.node, ts.SyntaxKind.ReadonlyKeyword)).map((p) => p.at)).toEqual([]);
});

test('every property has a JSDoc comment', () => {
  expect(properties.filter((p) => jsDoc(p).every((d) => !d.comment)).map((p) => p.at)).toEqual([]);
});

test('every optional property says its @default', () => {
  const withoutDefault = properties
    .filter((p) => p.node.questionToken !== undefined)
    .filter((p) => !ts.getJSDocTags(p.node).some((t) => t.tagName.text === 'default'));
  expect(withoutDefault.map((p) => p.at)).toEqual([]);
});

test('no public type is an inline object type, a mapped type or a utility type', () => {
  const bad = publicTypes.filter(({ type }) => {
    let found = !ts.isTypeNode(type) && !ts.isExpressionWithTypeArguments(type);
    const visit = (n: ts.Node) => {
      if (ts.isTypeLiteralNode(n) || ts.isMappedTypeNode(n)) found = true;
      const name = ts.isTypeReferenceNode(n) ? n.typeName.getText() : ts.isExpressionWithTypeArguments(n) ? n.expression.getText() : undefined;
      if (name && ['Omit', 'Pick', 'Partial', 'Required', 'Readonly', 'Exclude', 'Extract'].includes(name)) found = true;
      ts.forEachChild(n, visit);
    };
    visit(type);
    return found;
  });
  expect(bad.map((t) => t.at)).toEqual([]);
});

test('the resolved props are not public: they are how objects are built, not an API', () => {
  expect(publicTypes.filter((t) => /Resolved/.test(t.type.getText())).map((t) => t.at)).toEqual([]);
});

// Ids in paths and bodies are checked before they reach SQL: a malformed id is
// a clean 404 or 400, not a PostgreSQL cast error.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID.test(text);
}

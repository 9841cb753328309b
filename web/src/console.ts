namespace consoleApp {
  export function start(): void {}
}

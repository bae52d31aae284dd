/* Test plugin: a shared object that exports neither shs_plugin_init nor the ABI version. */
typedef int shs_no_entry_placeholder; /* a translation unit must declare something */

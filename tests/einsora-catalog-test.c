#include <gio/gio.h>
#include <string.h>

#include "einsora-catalog.h"
#include "einsora-error.h"
#include "einsora-test-dir.h"

/* Catalogs in this file are written with single quotes, which json_text()
 * turns into double quotes, so that the tables stay readable. */

#define REGIONS "'regions': [{'name': 'local', 'description': 'here'}, {'name': 'lab'}]"
#define DRIVERS                                                                                    \
    "'drivers': ["                                                                                 \
    "{'name': 'sim', 'kinds': ['notebook', 'endpoint', 'vm'],"                                     \
    " 'accelerators': ['cpu', 'apple', 'nvidia', 'amd']},"                                         \
    "{'name': 'docker', 'kinds': ['notebook'], 'accelerators': ['cpu', 'nvidia'],"                 \
    " 'isolation': 'weak'},"                                                                       \
    "{'name': 'libvirt', 'kinds': ['vm'], 'accelerators': ['cpu', 'nvidia']}]"
#define CLASSES                                                                                    \
    "'classes': ["                                                                                 \
    "{'name': 'cpu-2c-4g', 'cpus': 2, 'memory_mib': 4096, 'accelerator': 'cpu'},"                  \
    "{'name': 'l40s-48gb', 'cpus': 8, 'memory_mib': 32768, 'devices': 1,"                          \
    " 'accelerator': 'nvidia', 'regions': ['lab']}]"
#define IMAGES                                                                                     \
    "'images': [{'name': 'jupyter', 'kinds': ['notebook'], 'runtimes': {"                          \
    "'cpu': {'reference': 'jupyter:cpu', 'driver_refs': ['docker', 'sim']},"                       \
    "'nvidia': {'reference': 'jupyter:cuda', 'driver_refs': ['docker']}}}]"
#define MODELS                                                                                     \
    "'gpu_models': [{'vendor': 'nvidia', 'model': 'NVIDIA L40S', 'memory_mib': 46068,"             \
    " 'class': 'l40s-48gb'}]"
#define CATALOG(...) "{'version': 1, " __VA_ARGS__ "}"
#define VALID CATALOG(REGIONS ", " DRIVERS ", " CLASSES ", " IMAGES ", " MODELS)

/* Catalogs that replace one section; the others are the valid ones. */
#define WITH_REGIONS(...)                                                                          \
    CATALOG("'regions': [" __VA_ARGS__ "], " DRIVERS ", 'classes': [], " IMAGES)
#define WITH_DRIVERS(...)                                                                          \
    CATALOG(REGIONS ", 'drivers': [" __VA_ARGS__ "], " CLASSES ", 'images': []")
#define WITH_CLASSES(...) CATALOG(REGIONS ", " DRIVERS ", 'classes': [" __VA_ARGS__ "], " IMAGES)
#define WITH_IMAGES(...) CATALOG(REGIONS ", " DRIVERS ", " CLASSES ", 'images': [" __VA_ARGS__ "]")
#define WITH_MODELS(...)                                                                           \
    CATALOG(REGIONS ", " DRIVERS ", " CLASSES ", " IMAGES ", 'gpu_models': [" __VA_ARGS__ "]")

/* An image with one runtime, for the runtime cases. */
#define IMAGE(kinds, runtimes) "{'name': 'img', 'kinds': [" kinds "], 'runtimes': {" runtimes "}}"

#define LONG_NAME "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 64 */

typedef struct {
    const char *name; /* the test path's last part */
    const char *json;
    const char *message; /* expected in the error, after "catalog test.json: " */
} InvalidCase;

static const InvalidCase invalid_cases[] = {
    /* The document */
    {"not-json", "{'version': 1,", "not valid JSON"},
    /* Found by tests/fuzz/fuzz-catalog: json-glib leaks all but the last. */
    {"two-documents", "{}{}", "more than one value"},
    {"empty", "", "not a JSON object"},
    {"not-an-object", "['regions']", "not a JSON object"},
    {"unknown-top-level-field", CATALOG(REGIONS ", 'regoins': []"), "unknown field 'regoins'"},
    {"repeated-top-level-key", CATALOG(REGIONS ", " REGIONS), "key 'regions' appears twice"},
    {"repeated-runtime-key",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': 'a', 'driver_refs': ['sim']},"
                                     "'cpu': {'reference': 'b', 'driver_refs': ['sim']}")),
     "key 'cpu' appears twice"},
    {"missing-version", "{" REGIONS "}", "missing field 'version'"},
    {"version-not-a-number", "{'version': '1'}", "'version' must be a whole number"},
    {"version-not-whole", "{'version': 1.0}", "'version' must be a whole number"},
    {"version-unsupported", "{'version': 2}", "unsupported version 2"},
    {"missing-regions", CATALOG(DRIVERS ", " CLASSES ", " IMAGES), "missing field 'regions'"},
    {"regions-not-a-list", CATALOG("'regions': {}"), "'regions' must be a list"},
    {"no-regions", CATALOG("'regions': [], " DRIVERS ", 'classes': [], 'images': []"),
     "'regions' is empty"},
    {"missing-drivers", CATALOG(REGIONS ", " CLASSES ", " IMAGES), "missing field 'drivers'"},
    {"missing-classes", CATALOG(REGIONS ", " DRIVERS ", " IMAGES), "missing field 'classes'"},
    {"missing-images", CATALOG(REGIONS ", " DRIVERS ", " CLASSES), "missing field 'images'"},
    {"gpu-models-not-a-list",
     CATALOG(REGIONS ", " DRIVERS ", " CLASSES ", " IMAGES ", 'gpu_models': 'none'"),
     "'gpu_models' must be a list"},

    /* Regions, and the name rules every section shares */
    {"region-not-an-object", WITH_REGIONS("'local'"), "regions[0]: must be an object"},
    {"region-missing-name", WITH_REGIONS("{'description': 'x'}"),
     "regions[0]: missing field 'name'"},
    {"region-name-not-a-string", WITH_REGIONS("{'name': 7}"),
     "regions[0]: 'name' must be a string"},
    {"region-name-null", WITH_REGIONS("{'name': null}"), "regions[0]: 'name' must be a string"},
    {"region-name-empty", WITH_REGIONS("{'name': ''}"), "regions[0]: 'name' is empty"},
    {"region-name-uppercase", WITH_REGIONS("{'name': 'Local'}"),
     "regions[0] 'Local': invalid name 'Local'"},
    {"region-name-leading-dash", WITH_REGIONS("{'name': '-local'}"),
     "regions[0] '-local': invalid name"},
    {"region-name-trailing-dot", WITH_REGIONS("{'name': 'local.'}"),
     "regions[0] 'local.': invalid name"},
    {"region-name-space", WITH_REGIONS("{'name': 'my region'}"),
     "regions[0] 'my region': invalid name"},
    {"region-name-too-long", WITH_REGIONS("{'name': '" LONG_NAME "'}"),
     "regions[0] '" LONG_NAME "': invalid name"},
    {"region-name-control-character", WITH_REGIONS("{'name': 'a\\u0001'}"),
     "regions[0] 'a\\001': 'name' contains a control character"},
    {"region-unknown-field", WITH_REGIONS("{'name': 'local', 'descripton': 'x'}"),
     "regions[0] 'local': unknown field 'descripton'"},
    {"region-description-not-a-string", WITH_REGIONS("{'name': 'local', 'description': 1}"),
     "regions[0] 'local': 'description' must be a string"},
    {"region-duplicate", WITH_REGIONS("{'name': 'local'}, {'name': 'lab'}, {'name': 'local'}"),
     "regions[2] 'local': another region is already called 'local'"},

    /* Drivers */
    {"driver-unknown",
     WITH_DRIVERS("{'name': 'podman', 'kinds': ['notebook'],"
                  " 'accelerators': ['cpu']}"),
     "drivers[0] 'podman': unknown driver 'podman'; this daemon has sim, linux-native"},
    {"driver-name-invalid",
     WITH_DRIVERS("{'name': 'Docker', 'kinds': ['notebook'],"
                  " 'accelerators': ['cpu']}"),
     "drivers[0] 'Docker': invalid name 'Docker'"},
    {"driver-duplicate",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm'], 'accelerators': ['cpu']},"
                  "{'name': 'sim', 'kinds': ['notebook'], 'accelerators': ['cpu']}"),
     "drivers[1] 'sim': driver 'sim' is listed twice"},
    {"driver-unknown-field",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm'], 'accelerators': ['cpu'], 'limit': 2}"),
     "drivers[0] 'sim': unknown field 'limit'"},
    {"driver-missing-kinds", WITH_DRIVERS("{'name': 'sim', 'accelerators': ['cpu']}"),
     "drivers[0] 'sim': missing field 'kinds'"},
    {"driver-kinds-not-a-list",
     WITH_DRIVERS("{'name': 'sim', 'kinds': 'vm', 'accelerators': ['cpu']}"),
     "drivers[0] 'sim': 'kinds' must be a list"},
    {"driver-kinds-empty", WITH_DRIVERS("{'name': 'sim', 'kinds': [], 'accelerators': ['cpu']}"),
     "drivers[0] 'sim': 'kinds' is empty"},
    {"driver-kind-unknown",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['job'], 'accelerators': ['cpu']}"),
     "drivers[0] 'sim': unknown kind 'job'"},
    {"driver-kind-not-a-string",
     WITH_DRIVERS("{'name': 'sim', 'kinds': [1], 'accelerators': ['cpu']}"),
     "drivers[0] 'sim': 'kinds'[0] must be a string"},
    {"driver-kind-twice",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm', 'vm'], 'accelerators': ['cpu']}"),
     "drivers[0] 'sim': 'kinds' lists 'vm' twice"},
    {"driver-missing-accelerators", WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm']}"),
     "drivers[0] 'sim': missing field 'accelerators'"},
    {"driver-accelerator-unknown",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm'], 'accelerators': ['tpu']}"),
     "drivers[0] 'sim': unknown accelerator 'tpu'"},
    {"driver-widens-kinds",
     WITH_DRIVERS("{'name': 'docker', 'kinds': ['notebook', 'vm'], 'accelerators': ['cpu']}"),
     "drivers[0] 'docker': driver 'docker' cannot run vm"},
    {"driver-widens-accelerators",
     WITH_DRIVERS("{'name': 'docker', 'kinds': ['notebook'], 'accelerators': ['cpu', 'amd']}"),
     "drivers[0] 'docker': driver 'docker' cannot run on amd"},
    {"driver-isolation-stronger",
     WITH_DRIVERS("{'name': 'docker', 'kinds': ['notebook'], 'accelerators': ['cpu'],"
                  " 'isolation': 'strong'}"),
     "drivers[0] 'docker': driver 'docker' has weak isolation; a catalog cannot change it"},
    {"driver-isolation-weaker",
     WITH_DRIVERS("{'name': 'libvirt', 'kinds': ['vm'], 'accelerators': ['cpu'],"
                  " 'isolation': 'weak'}"),
     "drivers[0] 'libvirt': driver 'libvirt' has strong isolation"},
    {"driver-isolation-unknown",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm'], 'accelerators': ['cpu'],"
                  " 'isolation': 'none'}"),
     "drivers[0] 'sim': unknown isolation 'none'"},
    {"driver-isolation-not-a-string",
     WITH_DRIVERS("{'name': 'sim', 'kinds': ['vm'], 'accelerators': ['cpu'], 'isolation': true}"),
     "drivers[0] 'sim': 'isolation' must be a string"},

    /* Classes */
    {"class-not-an-object", WITH_CLASSES("[]"), "classes[0]: must be an object"},
    {"class-missing-name", WITH_CLASSES("{'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu'}"),
     "classes[0]: missing field 'name'"},
    {"class-name-invalid",
     WITH_CLASSES("{'name': 'cpu_2c', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu_2c': invalid name 'cpu_2c'"},
    {"class-unknown-field",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu',"
                  " 'gpus': 0}"),
     "classes[0] 'cpu-x': unknown field 'gpus'"},
    {"class-missing-cpus", WITH_CLASSES("{'name': 'cpu-x', 'memory_mib': 1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': missing field 'cpus'"},
    {"class-cpus-not-a-number",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': '2', 'memory_mib': 1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': 'cpus' must be a whole number"},
    {"class-cpus-fraction",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1.5, 'memory_mib': 1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': 'cpus' must be a whole number"},
    {"class-cpus-zero",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 0, 'memory_mib': 1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': 'cpus' must be at least 1"},
    {"class-missing-memory", WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': missing field 'memory_mib'"},
    {"class-memory-negative",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': -1, 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': 'memory_mib' must be at least 1"},
    {"class-devices-negative",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'devices': -1,"
                  " 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': 'devices' must not be negative"},
    {"class-missing-accelerator", WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1}"),
     "classes[0] 'cpu-x': missing field 'accelerator'"},
    {"class-accelerator-unknown",
     WITH_CLASSES("{'name': 'gpu-x', 'cpus': 1, 'memory_mib': 1, 'devices': 1,"
                  " 'accelerator': 'tpu'}"),
     "classes[0] 'gpu-x': unknown accelerator 'tpu'"},
    {"class-cpu-with-devices",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'devices': 1,"
                  " 'accelerator': 'cpu'}"),
     "classes[0] 'cpu-x': a cpu class has no devices"},
    {"class-gpu-without-devices",
     WITH_CLASSES("{'name': 'gpu-x', 'cpus': 1, 'memory_mib': 1, 'devices': 0,"
                  " 'accelerator': 'nvidia'}"),
     "classes[0] 'gpu-x': an nvidia class needs 'devices' of at least 1"},
    {"class-gpu-devices-left-out",
     WITH_CLASSES("{'name': 'gpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'amd'}"),
     "classes[0] 'gpu-x': an amd class needs 'devices' of at least 1"},
    {"class-apple-two-devices",
     WITH_CLASSES("{'name': 'mac-x', 'cpus': 1, 'memory_mib': 1, 'devices': 2,"
                  " 'accelerator': 'apple'}"),
     "classes[0] 'mac-x': an apple class has exactly one device"},
    {"class-region-unknown",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu',"
                  " 'regions': ['local', 'mars']}"),
     "classes[0] 'cpu-x': unknown region 'mars'"},
    {"class-regions-empty",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu',"
                  " 'regions': []}"),
     "classes[0] 'cpu-x': 'regions' is empty"},
    {"class-regions-twice",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu',"
                  " 'regions': ['lab', 'lab']}"),
     "classes[0] 'cpu-x': 'regions' lists 'lab' twice"},
    {"class-regions-not-strings",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu',"
                  " 'regions': [{'name': 'lab'}]}"),
     "classes[0] 'cpu-x': 'regions'[0] must be a string"},
    {"class-duplicate",
     WITH_CLASSES("{'name': 'cpu-x', 'cpus': 1, 'memory_mib': 1, 'accelerator': 'cpu'},"
                  "{'name': 'cpu-x', 'cpus': 2, 'memory_mib': 2, 'accelerator': 'cpu'}"),
     "classes[1] 'cpu-x': another class is already called 'cpu-x'"},

    /* Images and their runtimes */
    {"image-missing-name", WITH_IMAGES("{'kinds': ['vm'], 'runtimes': {}}"),
     "images[0]: missing field 'name'"},
    {"image-unknown-field", WITH_IMAGES("{'name': 'img', 'kind': ['notebook']}"),
     "images[0] 'img': unknown field 'kind'"},
    {"image-duplicate",
     WITH_IMAGES(IMAGE("'vm'", "'cpu': {'reference': 'r', 'driver_refs': ['sim']}") ", " IMAGE(
         "'vm'", "'cpu': {'reference': 'r', 'driver_refs': ['libvirt']}")),
     "images[1] 'img': another image is already called 'img'"},
    {"image-missing-kinds", WITH_IMAGES("{'name': 'img', 'runtimes': {}}"),
     "images[0] 'img': missing field 'kinds'"},
    {"image-kinds-empty", WITH_IMAGES(IMAGE("", "'cpu': {'reference': 'r', 'driver_refs': []}")),
     "images[0] 'img': 'kinds' is empty"},
    {"image-kind-unknown",
     WITH_IMAGES(IMAGE("'notebook', 'job'", "'cpu': {'reference': 'r', 'driver_refs': ['sim']}")),
     "images[0] 'img': unknown kind 'job'"},
    {"image-missing-runtimes", WITH_IMAGES("{'name': 'img', 'kinds': ['notebook']}"),
     "images[0] 'img': missing field 'runtimes'"},
    {"image-runtimes-a-list", WITH_IMAGES("{'name': 'img', 'kinds': ['notebook'], 'runtimes': []}"),
     "images[0] 'img': 'runtimes' must be an object keyed by accelerator"},
    {"image-runtimes-empty", WITH_IMAGES(IMAGE("'notebook'", "")),
     "images[0] 'img': 'runtimes' is empty"},
    {"runtime-accelerator-unknown",
     WITH_IMAGES(IMAGE("'notebook'", "'tpu': {'reference': 'r', 'driver_refs': ['sim']}")),
     "images[0] 'img': 'runtimes': unknown accelerator 'tpu'"},
    {"runtime-not-an-object", WITH_IMAGES(IMAGE("'notebook'", "'cpu': 'jupyter'")),
     "images[0] 'img': runtimes.cpu: must be an object"},
    {"runtime-unknown-field",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': 'r', 'drivers': ['sim']}")),
     "images[0] 'img': runtimes.cpu: unknown field 'drivers'"},
    {"runtime-missing-reference",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'driver_refs': ['sim']}")),
     "images[0] 'img': runtimes.cpu: missing field 'reference'"},
    {"runtime-reference-empty",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': '', 'driver_refs': ['sim']}")),
     "images[0] 'img': runtimes.cpu: 'reference' is empty"},
    {"runtime-missing-driver-refs", WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': 'r'}")),
     "images[0] 'img': runtimes.cpu: missing field 'driver_refs'"},
    {"runtime-driver-refs-empty",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': 'r', 'driver_refs': []}")),
     "images[0] 'img': runtimes.cpu: 'driver_refs' is empty"},
    {"runtime-driver-unknown",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': 'r', 'driver_refs': ['podman']}")),
     "images[0] 'img': runtimes.cpu: driver 'podman' is not in the catalog"},
    /* linux-native is in the domain table, but this catalog does not offer it. */
    {"runtime-driver-not-in-catalog",
     WITH_IMAGES(
         IMAGE("'notebook'", "'cpu': {'reference': 'r', 'driver_refs': ['sim', 'linux-native']}")),
     "images[0] 'img': runtimes.cpu: driver 'linux-native' is not in the catalog"},
    {"runtime-driver-wrong-accelerator",
     WITH_IMAGES(IMAGE("'notebook'", "'apple': {'reference': 'r', 'driver_refs': ['docker']}")),
     "images[0] 'img': runtimes.apple: driver 'docker' does not run on apple"},
    {"runtime-driver-wrong-kind",
     WITH_IMAGES(IMAGE("'vm'", "'cpu': {'reference': 'r', 'driver_refs': ['sim', 'docker']}")),
     "images[0] 'img': runtimes.cpu: driver 'docker' runs none of the image"},
    /* This catalog narrows docker to notebooks, though the domain table
     * lets it run endpoints too. */
    {"runtime-driver-narrowed-away",
     WITH_IMAGES(IMAGE("'endpoint'", "'nvidia': {'reference': 'r', 'driver_refs': ['docker']}")),
     "images[0] 'img': runtimes.nvidia: driver 'docker' runs none of the image"},
    {"runtime-server-unknown",
     WITH_IMAGES(
         IMAGE("'notebook'", "'cpu': {'reference': 'r', 'driver_refs': ['sim'], 'server': 'tgi'}")),
     "images[0] 'img': runtimes.cpu: unknown server \"tgi\"; one of jupyter, llama-server, vllm"},
    {"runtime-server-wrong-kind",
     WITH_IMAGES(IMAGE("'notebook'",
                       "'cpu': {'reference': 'r', 'driver_refs': ['sim'], 'server': 'vllm'}")),
     "images[0] 'img': runtimes.cpu: server \"vllm\" serves endpoints, and the image runs none"},
    {"runtime-server-jupyter-on-endpoint",
     WITH_IMAGES(IMAGE("'endpoint'",
                       "'cpu': {'reference': 'r', 'driver_refs': ['sim'], 'server': 'jupyter'}")),
     "images[0] 'img': runtimes.cpu: server \"jupyter\" serves notebooks, and the image runs none"},
    {"runtime-server-not-a-string",
     WITH_IMAGES(
         IMAGE("'notebook'", "'cpu': {'reference': 'r', 'driver_refs': ['sim'], 'server': 1}")),
     "images[0] 'img': runtimes.cpu: 'server' must be a string"},
    {"runtime-driver-twice",
     WITH_IMAGES(IMAGE("'notebook'", "'cpu': {'reference': 'r', 'driver_refs': ['sim', 'sim']}")),
     "images[0] 'img': runtimes.cpu: 'driver_refs' lists 'sim' twice"},

    /* GPU models */
    {"gpu-model-missing-model", WITH_MODELS("{'vendor': 'nvidia', 'memory_mib': 1, 'class': 'x'}"),
     "gpu_models[0]: missing field 'model'"},
    {"gpu-model-unknown-field",
     WITH_MODELS("{'vendor': 'nvidia', 'model': 'NVIDIA L4', 'memory_mib': 1,"
                 " 'class': 'l40s-48gb', 'count': 1}"),
     "gpu_models[0] 'NVIDIA L4': unknown field 'count'"},
    {"gpu-model-missing-vendor",
     WITH_MODELS("{'model': 'NVIDIA L4', 'memory_mib': 1, 'class': 'l40s-48gb'}"),
     "gpu_models[0] 'NVIDIA L4': missing field 'vendor'"},
    {"gpu-model-vendor-unknown",
     WITH_MODELS("{'vendor': 'intel', 'model': 'Intel Arc A770', 'memory_mib': 16384,"
                 " 'class': 'l40s-48gb'}"),
     "gpu_models[0] 'Intel Arc A770': unknown vendor 'intel'"},
    {"gpu-model-vendor-cpu",
     WITH_MODELS("{'vendor': 'cpu', 'model': 'EPYC', 'memory_mib': 1, 'class': 'cpu-2c-4g'}"),
     "gpu_models[0] 'EPYC': 'cpu' is not a GPU vendor"},
    {"gpu-model-memory-zero",
     WITH_MODELS("{'vendor': 'nvidia', 'model': 'NVIDIA L4', 'memory_mib': 0,"
                 " 'class': 'l40s-48gb'}"),
     "gpu_models[0] 'NVIDIA L4': 'memory_mib' must be at least 1"},
    {"gpu-model-class-unknown",
     WITH_MODELS("{'vendor': 'nvidia', 'model': 'NVIDIA B200', 'memory_mib': 1,"
                 " 'class': 'b200-192gb'}"),
     "gpu_models[0] 'NVIDIA B200': unknown class 'b200-192gb'"},
    {"gpu-model-class-other-vendor",
     WITH_MODELS("{'vendor': 'amd', 'model': 'AMD Instinct MI300X', 'memory_mib': 1,"
                 " 'class': 'l40s-48gb'}"),
     "gpu_models[0] 'AMD Instinct MI300X': class 'l40s-48gb' runs on nvidia, not amd"},
    {"gpu-model-class-cpu",
     WITH_MODELS("{'vendor': 'nvidia', 'model': 'NVIDIA L4', 'memory_mib': 1,"
                 " 'class': 'cpu-2c-4g'}"),
     "gpu_models[0] 'NVIDIA L4': class 'cpu-2c-4g' runs on cpu, not nvidia"},
    {"gpu-model-duplicate",
     WITH_MODELS("{'vendor': 'nvidia', 'model': 'NVIDIA L40S', 'memory_mib': 1,"
                 " 'class': 'l40s-48gb'},"
                 "{'vendor': 'nvidia', 'model': 'NVIDIA L40S', 'memory_mib': 2,"
                 " 'class': 'l40s-48gb'}"),
     "gpu_models[1] 'NVIDIA L40S': nvidia model 'NVIDIA L40S' is listed twice"},
};

/* The catalogs above, with their single quotes made double. */
static gchar *
json_text(const char *text)
{
    return g_strdelimit(g_strdup(text), "'", '"');
}

static EinsoraCatalog *
load_text(const char *text, GError **error)
{
    g_autofree gchar *json = json_text(text);
    return einsora_catalog_new_from_data(json, -1, "test.json", error);
}

/* Every invalid case differs from a valid catalog in one place only. */
static void
test_table_base_is_valid(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = load_text(VALID, &error);

    g_assert_no_error(error);
    g_assert_nonnull(catalog);
    g_assert_cmpuint(einsora_catalog_get_regions(catalog)->len, ==, 2);
    g_assert_cmpuint(einsora_catalog_get_drivers(catalog)->len, ==, 3);
    g_assert_cmpuint(einsora_catalog_get_classes(catalog)->len, ==, 2);
    g_assert_cmpuint(einsora_catalog_get_images(catalog)->len, ==, 1);
    g_assert_cmpuint(einsora_catalog_get_gpu_models(catalog)->len, ==, 1);
    g_assert_cmpstr(einsora_catalog_get_origin(catalog), ==, "test.json");
}

static void
test_invalid(gconstpointer data)
{
    const InvalidCase *c = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = load_text(c->json, &error);
    g_autofree gchar *expected = json_text(c->message);

    g_assert_null(catalog);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_test_message("%s", error->message);
    g_assert_true(g_str_has_prefix(error->message, "catalog test.json: "));
    if (strstr(error->message, expected) == NULL)
        g_error("expected \"%s\" in \"%s\"", expected, error->message);
}

static EinsoraCatalog *
builtin(void)
{
    g_autoptr(GError) error = NULL;
    EinsoraCatalog *catalog = einsora_catalog_new_builtin(&error);

    g_assert_no_error(error);
    g_assert_nonnull(catalog);
    return catalog;
}

static void
test_builtin_loads(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();

    g_assert_cmpstr(einsora_catalog_get_origin(catalog), ==,
                    "resource:///org/einsora/catalog/catalog.json");
    g_assert_cmpuint(einsora_catalog_get_regions(catalog)->len, >, 0);
    g_assert_cmpuint(einsora_catalog_get_classes(catalog)->len, >, 0);
    g_assert_cmpuint(einsora_catalog_get_images(catalog)->len, >, 0);
    g_assert_cmpuint(einsora_catalog_get_drivers(catalog)->len, >, 0);
    g_assert_cmpuint(einsora_catalog_get_gpu_models(catalog)->len, >, 0);
}

/* Solo has one region, local, and it is the default. */
static void
test_builtin_default_region(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();
    const EinsoraRegion *region;

    g_assert_cmpstr(einsora_catalog_get_default_region(catalog), ==, "local");
    region = einsora_catalog_lookup_region(catalog, "local");
    g_assert_nonnull(region);
    g_assert_cmpstr(region->description, !=, "");
    g_assert_null(einsora_catalog_lookup_region(catalog, "mars"));
    g_assert_null(einsora_catalog_lookup_region(catalog, NULL));
}

static void
test_builtin_classes(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();
    const EinsoraComputeClass *klass;

    klass = einsora_catalog_lookup_class(catalog, "cpu-4c-16g");
    g_assert_nonnull(klass);
    g_assert_cmpint(klass->cpus, ==, 4);
    g_assert_cmpint(klass->memory_mib, ==, 16384);
    g_assert_cmpint(klass->devices, ==, 0);
    g_assert_cmpint(klass->accelerator, ==, EINSORA_ACCELERATOR_CPU);
    g_assert_true(einsora_catalog_class_offered_in(klass, "local"));

    klass = einsora_catalog_lookup_class(catalog, "l40s-48gb");
    g_assert_nonnull(klass);
    g_assert_cmpint(klass->devices, ==, 1);
    g_assert_cmpint(klass->accelerator, ==, EINSORA_ACCELERATOR_NVIDIA);

    klass = einsora_catalog_lookup_class(catalog, "apple-silicon-16gb");
    g_assert_nonnull(klass);
    g_assert_cmpint(klass->devices, ==, 1);
    g_assert_cmpint(klass->accelerator, ==, EINSORA_ACCELERATOR_APPLE);

    g_assert_null(einsora_catalog_lookup_class(catalog, "tpu-v5"));
}

static void
test_builtin_images(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();
    const EinsoraImage *image;
    const EinsoraImageRuntime *runtime;

    image = einsora_catalog_lookup_image(catalog, "jupyter-notebook");
    g_assert_nonnull(image);
    g_assert_true(einsora_image_supports_kind(image, EINSORA_WORKLOAD_KIND_NOTEBOOK));
    g_assert_false(einsora_image_supports_kind(image, EINSORA_WORKLOAD_KIND_ENDPOINT));
    runtime = einsora_image_lookup_runtime(image, EINSORA_ACCELERATOR_NVIDIA);
    g_assert_nonnull(runtime);
    g_assert_cmpint(runtime->accelerator, ==, EINSORA_ACCELERATOR_NVIDIA);
    g_assert_true(g_strv_contains((const gchar *const *)runtime->driver_refs, "docker"));
    runtime = einsora_image_lookup_runtime(image, EINSORA_ACCELERATOR_APPLE);
    g_assert_nonnull(runtime);
    g_assert_true(g_strv_contains((const gchar *const *)runtime->driver_refs, "macos-native"));
    g_assert_false(g_strv_contains((const gchar *const *)runtime->driver_refs, "docker"));

    image = einsora_catalog_lookup_image(catalog, "vllm");
    g_assert_nonnull(image);
    g_assert_true(einsora_image_supports_kind(image, EINSORA_WORKLOAD_KIND_ENDPOINT));
    g_assert_nonnull(einsora_image_lookup_runtime(image, EINSORA_ACCELERATOR_NVIDIA));
    g_assert_null(einsora_image_lookup_runtime(image, EINSORA_ACCELERATOR_CPU));
    /* Its server is vLLM, not the endpoint kind's llama-server. */
    g_assert_cmpstr(einsora_image_lookup_runtime(image, EINSORA_ACCELERATOR_NVIDIA)->server, ==,
                    "vllm");
    g_assert_null(runtime->server);

    image = einsora_catalog_lookup_image(catalog, "mlx-lm");
    g_assert_nonnull(image);
    g_assert_nonnull(einsora_image_lookup_runtime(image, EINSORA_ACCELERATOR_APPLE));

    image = einsora_catalog_lookup_image(catalog, "ubuntu-24.04");
    g_assert_nonnull(image);
    g_assert_true(einsora_image_supports_kind(image, EINSORA_WORKLOAD_KIND_VM));

    g_assert_null(einsora_catalog_lookup_image(catalog, "windows-11"));
}

/* The built-in catalog offers every driver the daemon knows, as the
 * domain table defines it, narrowing nothing. */
static void
test_builtin_drivers(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();
    guint n_drivers;
    const EinsoraDriverInfo *table = einsora_driver_table(&n_drivers);

    g_assert_cmpuint(einsora_catalog_get_drivers(catalog)->len, ==, n_drivers);
    for (guint i = 0; i < n_drivers; i++) {
        const EinsoraCatalogDriver *driver = einsora_catalog_lookup_driver(catalog, table[i].name);
        g_assert_nonnull(driver);
        g_assert_true(driver->info == &table[i]);
        g_assert_cmpuint(driver->kinds, ==, table[i].kinds);
        g_assert_cmpuint(driver->accelerators, ==, table[i].accelerators);
    }
    g_assert_cmpint(einsora_catalog_lookup_driver(catalog, "libvirt")->info->isolation, ==,
                    EINSORA_ISOLATION_STRONG);
    g_assert_null(einsora_catalog_lookup_driver(catalog, "podman"));
}

/* Every built-in class can run something: some image has a runtime for
 * its accelerator. */
static void
test_builtin_every_class_has_an_image(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();
    GPtrArray *classes = einsora_catalog_get_classes(catalog);
    GPtrArray *images = einsora_catalog_get_images(catalog);

    for (guint i = 0; i < classes->len; i++) {
        const EinsoraComputeClass *klass = g_ptr_array_index(classes, i);
        gboolean found = FALSE;
        for (guint j = 0; j < images->len && !found; j++)
            found = einsora_image_lookup_runtime(g_ptr_array_index(images, j),
                                                 klass->accelerator) != NULL;
        if (!found)
            g_error("no image runs class %s", klass->name);
    }
}

static void
test_builtin_gpu_models(void)
{
    g_autoptr(EinsoraCatalog) catalog = builtin();

    g_assert_cmpstr(
        einsora_catalog_class_for_gpu_model(catalog, EINSORA_ACCELERATOR_NVIDIA, "NVIDIA L40S"), ==,
        "l40s-48gb");
    g_assert_cmpstr(
        einsora_catalog_class_for_gpu_model(catalog, EINSORA_ACCELERATOR_NVIDIA, "NVIDIA L4"), ==,
        "nvidia-l4-24gb");
    g_assert_cmpstr(einsora_catalog_class_for_gpu_model(catalog, EINSORA_ACCELERATOR_AMD,
                                                        "AMD Instinct MI300X"),
                    ==, "amd-mi300x-192gb");
    /* The vendor is part of the key. */
    g_assert_null(
        einsora_catalog_class_for_gpu_model(catalog, EINSORA_ACCELERATOR_AMD, "NVIDIA L40S"));
    g_assert_null(
        einsora_catalog_class_for_gpu_model(catalog, EINSORA_ACCELERATOR_NVIDIA, "NVIDIA GB200"));
    g_assert_null(einsora_catalog_class_for_gpu_model(catalog, EINSORA_ACCELERATOR_NVIDIA, NULL));
}

static void
test_load_null_is_builtin(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) from_null = einsora_catalog_load(NULL, &error);
    g_autoptr(EinsoraCatalog) from_empty = NULL;

    g_assert_no_error(error);
    g_assert_cmpstr(einsora_catalog_get_origin(from_null), ==,
                    "resource:///org/einsora/catalog/catalog.json");
    from_empty = einsora_catalog_load("", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(einsora_catalog_get_origin(from_empty), ==,
                    "resource:///org/einsora/catalog/catalog.json");
}

/* A file replaces the built-in catalog whole: its first region is the
 * default, and what it leaves out is not offered. */
static void
test_load_override_file(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *path = g_build_filename(dir, "catalog.json", NULL);
    g_autofree gchar *json = json_text(VALID);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = NULL;
    const EinsoraComputeClass *klass;
    const EinsoraCatalogDriver *docker;

    g_file_set_contents(path, json, -1, &error);
    g_assert_no_error(error);
    catalog = einsora_catalog_load(path, &error);
    g_assert_no_error(error);
    g_assert_nonnull(catalog);

    g_assert_cmpstr(einsora_catalog_get_origin(catalog), ==, path);
    g_assert_cmpstr(einsora_catalog_get_default_region(catalog), ==, "local");
    g_assert_cmpstr(einsora_catalog_lookup_region(catalog, "local")->description, ==, "here");
    g_assert_cmpstr(einsora_catalog_lookup_region(catalog, "lab")->description, ==, "");
    g_assert_null(einsora_catalog_lookup_image(catalog, "vllm"));

    /* Regions on a class limit where it is offered. */
    klass = einsora_catalog_lookup_class(catalog, "l40s-48gb");
    g_assert_nonnull(klass);
    g_assert_true(einsora_catalog_class_offered_in(klass, "lab"));
    g_assert_false(einsora_catalog_class_offered_in(klass, "local"));
    klass = einsora_catalog_lookup_class(catalog, "cpu-2c-4g");
    g_assert_true(einsora_catalog_class_offered_in(klass, "local"));
    g_assert_true(einsora_catalog_class_offered_in(klass, "lab"));

    /* The catalog narrows docker to notebooks; its isolation stays the
     * domain table's. */
    docker = einsora_catalog_lookup_driver(catalog, "docker");
    g_assert_nonnull(docker);
    g_assert_true(einsora_catalog_driver_runs(docker, EINSORA_WORKLOAD_KIND_NOTEBOOK,
                                              EINSORA_ACCELERATOR_CPU));
    g_assert_false(einsora_catalog_driver_runs(docker, EINSORA_WORKLOAD_KIND_ENDPOINT,
                                               EINSORA_ACCELERATOR_CPU));
    g_assert_true(
        einsora_driver_runs(docker->info, EINSORA_WORKLOAD_KIND_ENDPOINT, EINSORA_ACCELERATOR_CPU));
    g_assert_cmpint(docker->info->isolation, ==, EINSORA_ISOLATION_WEAK);

    g_clear_object(&catalog);
    einsora_test_dir_remove(dir);
}

static void
test_load_missing_file(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *path = g_build_filename(dir, "nowhere.json", NULL);
    g_autofree gchar *prefix = g_strdup_printf("catalog %s: ", path);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = einsora_catalog_load(path, &error);

    g_assert_null(catalog);
    g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
    g_assert_true(g_str_has_prefix(error->message, prefix));
    einsora_test_dir_remove(dir);
}

/* A bad file's errors name the file, so the operator knows which to fix. */
static void
test_load_invalid_file(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *path = g_build_filename(dir, "catalog.json", NULL);
    g_autofree gchar *json = json_text(WITH_CLASSES(
        "{'name': 'gpu-x', 'cpus': 1, 'memory_mib': 1, 'devices': 1, 'accelerator': 'tpu'}"));
    g_autofree gchar *expected =
        g_strdup_printf("catalog %s: classes[0] \"gpu-x\": unknown accelerator \"tpu\"", path);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = NULL;

    g_file_set_contents(path, json, -1, &error);
    g_assert_no_error(error);
    catalog = einsora_catalog_load(path, &error);
    g_assert_null(catalog);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(error->message, ==, expected);
    einsora_test_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/catalog/builtin/loads", test_builtin_loads);
    g_test_add_func("/catalog/builtin/default-region-is-local", test_builtin_default_region);
    g_test_add_func("/catalog/builtin/classes", test_builtin_classes);
    g_test_add_func("/catalog/builtin/images", test_builtin_images);
    g_test_add_func("/catalog/builtin/drivers-match-domain-table", test_builtin_drivers);
    g_test_add_func("/catalog/builtin/every-class-has-an-image",
                    test_builtin_every_class_has_an_image);
    g_test_add_func("/catalog/builtin/gpu-models", test_builtin_gpu_models);
    g_test_add_func("/catalog/load/null-is-builtin", test_load_null_is_builtin);
    g_test_add_func("/catalog/load/override-file", test_load_override_file);
    g_test_add_func("/catalog/load/missing-file-names-path", test_load_missing_file);
    g_test_add_func("/catalog/load/invalid-file-names-path", test_load_invalid_file);
    g_test_add_func("/catalog/invalid/base-is-valid", test_table_base_is_valid);
    for (guint i = 0; i < G_N_ELEMENTS(invalid_cases); i++) {
        g_autofree gchar *path = g_strdup_printf("/catalog/invalid/%s", invalid_cases[i].name);
        g_test_add_data_func(path, &invalid_cases[i], test_invalid);
    }
    return g_test_run();
}

#!/usr/bin/env python3
"""check-translations.py SOURCE_ROOT [DESKTOP_FILE METAINFO_FILE]

The translations in po/ against the sources as they are now (docs/adr/0063):

- every source file under app/ and data/ that marks strings for gettext is
  listed in po/POTFILES;
- a template made afresh from po/POTFILES, with the xgettext arguments of
  meson's i18n.gettext(preset: 'glib') (po/meson.build), has every msgid and
  msgid_plural translated, not fuzzy, in the .po of every language in
  po/LINGUAS, and LINGUAS has German, which is kept complete;
- msgfmt --check --check-format accepts every one of those .po files;
- given the built desktop file and metainfo (data/meson.build merges them
  through po/), both carry every language's text.

Exits 1 naming what is missing; 77 (skip) where xgettext or msgfmt is not
installed.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# What meson 1.0's i18n module passes to xgettext for preset 'glib'
# (mesonbuild/modules/i18n.py, PRESET_ARGS), besides the -k_ its gettext
# script adds; keep the two the same.
GLIB_PRESET_ARGS = [
    '--from-code=UTF-8',
    '--add-comments',
    '--keyword=_',
    '--keyword=N_',
    '--keyword=C_:1c,2',
    '--keyword=NC_:1c,2',
    '--keyword=g_dcgettext:2',
    '--keyword=g_dngettext:2,3',
    '--keyword=g_dpgettext2:2c,3',
    '--flag=N_:1:pass-c-format',
    '--flag=C_:2:pass-c-format',
    '--flag=NC_:2:pass-c-format',
    '--flag=g_dngettext:2:pass-c-format',
    '--flag=g_strdup_printf:1:c-format',
    '--flag=g_string_printf:2:c-format',
    '--flag=g_string_append_printf:2:c-format',
    '--flag=g_error_new:3:c-format',
    '--flag=g_set_error:4:c-format',
    '--flag=g_markup_printf_escaped:1:c-format',
    '--flag=g_log:3:c-format',
    '--flag=g_print:1:c-format',
    '--flag=g_printerr:1:c-format',
    '--flag=g_printf:1:c-format',
    '--flag=g_fprintf:2:c-format',
    '--flag=g_sprintf:2:c-format',
    '--flag=g_snprintf:3:c-format',
]

# German is the language the project keeps complete itself.
REQUIRED_LANGUAGES = ['de']

# A C or .ui source that marks something for translation.
MARKED = re.compile(r'\b(?:N?C?_|g_d[cnp]*gettext2?|n?gettext)\s*\(|translatable="yes"')

ESCAPES = {'n': '\n', 't': '\t', 'r': '\r', '"': '"', '\\': '\\', 'a': '\a', 'b': '\b',
           'f': '\f', 'v': '\v'}

failures = []


def fail(message):
    failures.append(message)


def unquote(text):
    text = text.strip()
    if not (text.startswith('"') and text.endswith('"')):
        raise ValueError('not a quoted PO string: ' + text)
    return re.sub(r'\\(.)', lambda m: ESCAPES.get(m.group(1), m.group(1)), text[1:-1])


def read_po(path):
    """The entries of a .po or .pot file, obsolete ones left out: dicts of
    msgctxt, msgid, msgid_plural, msgstr (a list) and fuzzy."""
    entries = []
    entry = None
    field = None
    with open(path, encoding='utf-8') as f:
        lines = f.read().splitlines()
    lines.append('')
    for line in lines:
        line = line.strip()
        if line.startswith('#~'):
            continue
        if line == '' or (line.startswith('#') and entry is not None and 'msgid' in entry):
            if entry is not None and 'msgid' in entry:
                entries.append(entry)
                entry = None
                field = None
            if line == '':
                continue
        if entry is None:
            entry = {'msgctxt': None, 'msgid_plural': None, 'msgstr': {}, 'fuzzy': False}
        if line.startswith('#,'):
            entry['fuzzy'] = entry['fuzzy'] or 'fuzzy' in [f.strip() for f in line[2:].split(',')]
            continue
        if line.startswith('#'):
            continue
        m = re.match(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(".*")$', line)
        if m:
            keyword, index, value = m.group(1), m.group(2), unquote(m.group(3))
            if keyword.startswith('msgstr'):
                field = ('msgstr', int(index) if index is not None else 0)
                entry['msgstr'][field[1]] = value
            else:
                field = (keyword, None)
                entry[keyword] = value
        elif line.startswith('"') and field is not None:
            if field[0] == 'msgstr':
                entry['msgstr'][field[1]] += unquote(line)
            else:
                entry[field[0]] += unquote(line)
        else:
            raise ValueError(f'{path}: cannot read line: {line}')
    return entries


def key(entry):
    return (entry['msgctxt'], entry['msgid'])


def show(entry):
    text = entry['msgid']
    if entry['msgid_plural'] is not None:
        text += '" / "' + entry['msgid_plural']
    if entry['msgctxt'] is not None:
        return f'"{text}" (context "{entry["msgctxt"]}")'
    return f'"{text}"'


def read_list(path):
    with open(path, encoding='utf-8') as f:
        return [w for line in f if not line.lstrip().startswith('#') for w in line.split()]


def check_potfiles(root, potfiles):
    listed = set(potfiles)
    for top in ('app', 'data'):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(('.c', '.ui', '.in', '.xml')):
                    continue
                path = os.path.join(dirpath, name)
                relative = os.path.relpath(path, root)
                if relative in listed:
                    continue
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = f.read()
                if name.endswith('.c') or name.endswith('.ui'):
                    marked = MARKED.search(text) is not None
                else:
                    # Desktop files, metainfo, schemas: what xgettext's
                    # rules translate.
                    marked = (name.endswith(('.desktop.in', '.metainfo.xml.in')) or
                              (name.endswith('.gschema.xml') and '<summary>' in text))
                if marked:
                    fail(f'{relative} has strings for translators but is not in po/POTFILES')
    for relative in potfiles:
        if not os.path.exists(os.path.join(root, relative)):
            fail(f'po/POTFILES lists {relative}, which does not exist')


def make_template(root, tmp):
    pot = os.path.join(tmp, 'einsora.pot')
    subprocess.run(['xgettext', '--package-name=einsora', '-p', tmp,
                    '-f', os.path.join(root, 'po', 'POTFILES'), '-D', root, '-k_',
                    '-o', pot] + GLIB_PRESET_ARGS, check=True)
    return pot


def check_language(root, lang, template):
    po = os.path.join(root, 'po', lang + '.po')
    if not os.path.exists(po):
        fail(f'po/LINGUAS has {lang} but there is no po/{lang}.po')
        return {}
    result = subprocess.run(['msgfmt', '--check', '--check-format', '-o', os.devnull, po],
                            capture_output=True, text=True)
    if result.returncode != 0:
        fail(f'msgfmt --check --check-format po/{lang}.po:\n{result.stderr.rstrip()}')
    translations = {key(e): e for e in read_po(po) if e['msgid'] != ''}
    for entry in template:
        if entry['msgid'] == '':
            continue
        found = translations.get(key(entry))
        if found is None:
            fail(f'po/{lang}.po lacks {show(entry)}')
        elif found['msgid_plural'] != entry['msgid_plural']:
            fail(f'po/{lang}.po has {show(found)}, not {show(entry)}')
        elif found['fuzzy']:
            fail(f'po/{lang}.po has {show(entry)} fuzzy')
        elif not found['msgstr'] or any(s == '' for s in found['msgstr'].values()):
            fail(f'po/{lang}.po leaves {show(entry)} untranslated')
    return translations


def check_desktop_file(path, source, lang, translations):
    with open(path, encoding='utf-8') as f:
        built = f.read().splitlines()
    with open(source, encoding='utf-8') as f:
        lines = f.read().splitlines()
    for line in lines:
        m = re.match(r'(Name|GenericName|Comment|Keywords)=(.*)$', line)
        if not m:
            continue
        found = translations.get((None, m.group(2)))
        if found is None:
            continue
        wanted = f'{m.group(1)}[{lang}]={found["msgstr"][0]}'
        if wanted not in built:
            fail(f'{path} lacks {wanted}')


def check_metainfo(path, lang, translations):
    xml_lang = '{http://www.w3.org/XML/1998/namespace}lang'
    component = ET.parse(path).getroot()
    for tag in ('name', 'summary'):
        elements = component.findall(tag)
        untranslated = [e for e in elements if e.get(xml_lang) is None]
        if not untranslated:
            fail(f'{path} has no <{tag}>')
            continue
        found = translations.get((None, untranslated[0].text))
        wanted = found['msgstr'][0] if found is not None else None
        if not any(e.get(xml_lang) == lang and e.text == wanted for e in elements):
            fail(f'{path} lacks <{tag} xml:lang="{lang}">{wanted}</{tag}>')
    if not any(e.get(xml_lang) == lang for e in component.iter('p')):
        fail(f'{path} has no <p xml:lang="{lang}"> in its description')


def main(argv):
    if len(argv) not in (2, 4):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    root = argv[1]
    for tool in ('xgettext', 'msgfmt'):
        if shutil.which(tool) is None:
            print(f'skipped: {tool} is not installed (packaging/dev/deps.sh)', file=sys.stderr)
            return 77
    potfiles = read_list(os.path.join(root, 'po', 'POTFILES'))
    languages = read_list(os.path.join(root, 'po', 'LINGUAS'))
    check_potfiles(root, potfiles)
    for lang in REQUIRED_LANGUAGES:
        if lang not in languages:
            fail(f'po/LINGUAS lacks {lang}')

    with tempfile.TemporaryDirectory() as tmp:
        template = read_po(make_template(root, tmp))
    print(f'{len(template) - 1} messages in a fresh template; languages: {" ".join(languages)}')
    for lang in languages:
        translations = check_language(root, lang, template)
        if len(argv) == 4 and translations:
            check_desktop_file(argv[2], os.path.join(root, 'data', 'dev.einsora.Einsora.desktop.in'),
                               lang, translations)
            check_metainfo(argv[3], lang, translations)

    for message in failures:
        print(message, file=sys.stderr)
    if failures:
        print(f'{len(failures)} problems. `meson compile -C BUILDDIR einsora-pot '
              'einsora-update-po` refreshes po/einsora.pot and brings its new messages into '
              'every po/LANG.po, untranslated or fuzzy: translate those', file=sys.stderr)
        return 1
    print('translations complete')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

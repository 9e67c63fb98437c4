import os
from glob import glob

from setuptools import find_packages, setup

package_name = 'maxim_core'


def tree(directory):
    """Data files of a folder, kept in their sub-folders under share/<package>/."""
    out = []
    for path in glob(os.path.join(directory, '**', '*'), recursive=True):
        if os.path.isfile(path):
            out.append((os.path.join('share', package_name, os.path.dirname(path)), [path]))
    return out


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    package_data={package_name: ['**/*.xml', '**/*.json', '**/*.yaml', '**/*.gbnf', '**/*.txt',
                                 '**/*.npz']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='Maxim developers',
    maintainer_email='dev@maxim-robot.org',
    description=('LLM, prompts, deliberation, tools, fear gate, idle introspection and agent '
                 'loop.'),
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'llm_node = maxim_core.nodes.llm_node:main',
            'agent_node = maxim_core.nodes.agent_node:main',
            'fear_node = maxim_core.nodes.fear_node:main',
            'recorder_node = maxim_core.nodes.recorder_node:main',
        ],
    },
)
